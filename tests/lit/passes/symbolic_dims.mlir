// RUN: onnxc-opt %s -p fuse-matmul-add,fuse-layernorm,fuse-gelu,fuse-attention,horizontal-fusion,fuse-activation,cse,horizontal-fusion,cancel-transposes,merge-reshapes,algebraic-identities,drop-full-slice,fuse-reduce-to-global-pool,reduce-before-shift,drop-padding-taps,split-conv-live-regions --split-input-file | filecheck %s
// RUN: onnxc-opt %s -p fuse-elementwise --split-input-file | filecheck %s --check-prefix=ELTWISE
// RUN: onnxc-opt %s -p "assign-layout{vector-bits=512}" --split-input-file | filecheck %s --check-prefix=LAYOUT

// Symbolic dimensions (`#graph.dims`): a transformer's `seq` stays a symbol, and every rewrite
// whose rule does not depend on the size fires as on a static shape, keeping the symbolic
// types. Rewrites that need a size (a constant of the symbolic size, which taps of a conv read
// only padding, s times a symbolic element count) leave the ops alone, without an error.

// A 2-D MatMul + bias is a Gemm whatever the number of rows.
func.func @gemm_rows(%x: tensor<?x64xf32, #graph.dims<["seq"]>>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<?x32xf32, #graph.dims<["seq"]>> {
  %m = graph.matmul(%x, %w) : (tensor<?x64xf32, #graph.dims<["seq"]>>, tensor<64x32xf32>) -> tensor<?x32xf32, #graph.dims<["seq"]>>
  %y = graph.add(%m, %b) : (tensor<?x32xf32, #graph.dims<["seq"]>>, tensor<32xf32>) -> tensor<?x32xf32, #graph.dims<["seq"]>>
  func.return %y : tensor<?x32xf32, #graph.dims<["seq"]>>
}
// CHECK-LABEL: func.func @gemm_rows(
// CHECK-NEXT:    %y = graph.gemm(%x, %w, %b) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<?x64xf32, #graph.dims<["seq"]>>, tensor<64x32xf32>, tensor<32xf32>) -> tensor<?x32xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    func.return %y

// -----

// PyTorch's decomposed LayerNorm over the hidden axis of [1, seq, 64].
func.func @layernorm(%x: tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>> {
  %two = graph.constant {value = dense<2.000000e+00> : tensor<f32>} : tensor<f32>
  %eps = graph.constant {value = dense<9.99999974E-6> : tensor<f32>} : tensor<f32>
  %gamma = graph.constant {value = dense<1.5> : tensor<64xf32>} : tensor<64xf32>
  %beta = graph.constant {value = dense<0.5> : tensor<64xf32>} : tensor<64xf32>
  %mean = graph.reduce_mean(%x) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x1xf32, #graph.dims<["seq"]>>
  %d = graph.sub(%x, %mean) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<1x?x1xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %sq = graph.pow(%d, %two) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<f32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %var = graph.reduce_mean(%sq) {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x1xf32, #graph.dims<["seq"]>>
  %ve = graph.add(%var, %eps) : (tensor<1x?x1xf32, #graph.dims<["seq"]>>, tensor<f32>) -> tensor<1x?x1xf32, #graph.dims<["seq"]>>
  %std = graph.sqrt(%ve) : (tensor<1x?x1xf32, #graph.dims<["seq"]>>) -> tensor<1x?x1xf32, #graph.dims<["seq"]>>
  %n = graph.div(%d, %std) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<1x?x1xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %g = graph.mul(%n, %gamma) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<64xf32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %y = graph.add(%g, %beta) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<64xf32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  func.return %y : tensor<1x?x64xf32, #graph.dims<["seq"]>>
}
// CHECK-LABEL: func.func @layernorm(
// CHECK-NOT:     graph.reduce_mean
// CHECK:         %y = graph.layer_normalization(%x, %{{.*}}, %{{.*}}) {axis = 2 : i64, epsilon = 1.000000e-05 : f32} : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    func.return %y

// -----

// The exact-erf GELU as HF BERT exports it.
func.func @gelu(%x: tensor<1x?x256xf32, #graph.dims<["seq"]>>) -> tensor<1x?x256xf32, #graph.dims<["seq"]>> {
  %sqrt2 = graph.constant {value = dense<1.41421354> : tensor<f32>} : tensor<f32>
  %one = graph.constant {value = dense<1.000000e+00> : tensor<f32>} : tensor<f32>
  %half = graph.constant {value = dense<5.000000e-01> : tensor<f32>} : tensor<f32>
  %s = graph.div(%x, %sqrt2) : (tensor<1x?x256xf32, #graph.dims<["seq"]>>, tensor<f32>) -> tensor<1x?x256xf32, #graph.dims<["seq"]>>
  %e = graph.erf(%s) : (tensor<1x?x256xf32, #graph.dims<["seq"]>>) -> tensor<1x?x256xf32, #graph.dims<["seq"]>>
  %p = graph.add(%e, %one) : (tensor<1x?x256xf32, #graph.dims<["seq"]>>, tensor<f32>) -> tensor<1x?x256xf32, #graph.dims<["seq"]>>
  %m = graph.mul(%x, %p) : (tensor<1x?x256xf32, #graph.dims<["seq"]>>, tensor<1x?x256xf32, #graph.dims<["seq"]>>) -> tensor<1x?x256xf32, #graph.dims<["seq"]>>
  %y = graph.mul(%m, %half) : (tensor<1x?x256xf32, #graph.dims<["seq"]>>, tensor<f32>) -> tensor<1x?x256xf32, #graph.dims<["seq"]>>
  func.return %y : tensor<1x?x256xf32, #graph.dims<["seq"]>>
}
// CHECK-LABEL: func.func @gelu(
// CHECK-NEXT:    %y = graph.gelu(%x) {approximate = "none"} : (tensor<1x?x256xf32, #graph.dims<["seq"]>>) -> tensor<1x?x256xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    func.return %y

// -----

// BERT self-attention on [1, heads, seq, 32]: the scores are [1, 2, seq, seq] (two symbolic
// dimensions); K arrives as [1, seq, 2, 32] and keeps a Transpose to [1, 2, seq, 32].
func.func @attention(%q: tensor<1x2x?x32xf32, #graph.dims<["seq"]>>, %k: tensor<1x?x2x32xf32, #graph.dims<["seq"]>>, %v: tensor<1x2x?x32xf32, #graph.dims<["seq"]>>, %mask: tensor<1x1x1x?xf32, #graph.dims<["seq"]>>) -> tensor<1x2x?x32xf32, #graph.dims<["seq"]>> {
  %c = graph.constant {value = dense<8.000000e+00> : tensor<f32>} : tensor<f32>
  %kt = graph.transpose(%k) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x?x2x32xf32, #graph.dims<["seq"]>>) -> tensor<1x2x32x?xf32, #graph.dims<["seq"]>>
  %s = graph.matmul(%q, %kt) : (tensor<1x2x?x32xf32, #graph.dims<["seq"]>>, tensor<1x2x32x?xf32, #graph.dims<["seq"]>>) -> tensor<1x2x?x?xf32, #graph.dims<["seq", "seq"]>>
  %d = graph.div(%s, %c) : (tensor<1x2x?x?xf32, #graph.dims<["seq", "seq"]>>, tensor<f32>) -> tensor<1x2x?x?xf32, #graph.dims<["seq", "seq"]>>
  %m = graph.add(%d, %mask) : (tensor<1x2x?x?xf32, #graph.dims<["seq", "seq"]>>, tensor<1x1x1x?xf32, #graph.dims<["seq"]>>) -> tensor<1x2x?x?xf32, #graph.dims<["seq", "seq"]>>
  %p = graph.softmax(%m) {axis = -1 : i64} : (tensor<1x2x?x?xf32, #graph.dims<["seq", "seq"]>>) -> tensor<1x2x?x?xf32, #graph.dims<["seq", "seq"]>>
  %o = graph.matmul(%p, %v) : (tensor<1x2x?x?xf32, #graph.dims<["seq", "seq"]>>, tensor<1x2x?x32xf32, #graph.dims<["seq"]>>) -> tensor<1x2x?x32xf32, #graph.dims<["seq"]>>
  func.return %o : tensor<1x2x?x32xf32, #graph.dims<["seq"]>>
}
// CHECK-LABEL: func.func @attention(
// CHECK-NEXT:    %[[K:.*]] = graph.transpose(%k) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x32xf32, #graph.dims<["seq"]>>) -> tensor<1x2x?x32xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    %o = graph.attention(%q, %[[K]], %v, %mask) {scale = 1.250000e-01 : f32} : (tensor<1x2x?x32xf32, #graph.dims<["seq"]>>, tensor<1x2x?x32xf32, #graph.dims<["seq"]>>, tensor<1x2x?x32xf32, #graph.dims<["seq"]>>, tensor<1x1x1x?xf32, #graph.dims<["seq"]>>) -> tensor<1x2x?x32xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    func.return %o

// -----

// Q and K projections of one activation (MatMul + bias each): each the Gemm of the rows'
// view (fuse-matmul-add), the views merged (cse), then one wide Gemm with the two biases
// and a Split (horizontal-fusion, the -O pipeline's second round), all with the symbolic
// row dimension.
func.func @projections(%x: tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<1x?x64xf32, #graph.dims<["seq"]>>) {
  %wq = graph.constant {value = dense<0.5> : tensor<64x64xf32>} : tensor<64x64xf32>
  %wk = graph.constant {value = dense<0.25> : tensor<64x64xf32>} : tensor<64x64xf32>
  %bq = graph.constant {value = dense<1.0> : tensor<64xf32>} : tensor<64xf32>
  %bk = graph.constant {value = dense<2.0> : tensor<64xf32>} : tensor<64xf32>
  %q = graph.matmul(%x, %wq) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<64x64xf32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %k = graph.matmul(%x, %wk) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<64x64xf32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %qb = graph.add(%q, %bq) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<64xf32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %kb = graph.add(%k, %bk) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<64xf32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  func.return %qb, %kb : tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<1x?x64xf32, #graph.dims<["seq"]>>
}
// CHECK-LABEL: func.func @projections(
// CHECK:         %[[ROWS:.*]] = graph.reshape(%x) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<?x64xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    %[[W:.*]] = graph.constant {{.*}} : tensor<64x128xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant {{.*}} : tensor<128xf32>
// CHECK-NEXT:    %[[WIDE:.*]] = graph.gemm(%[[ROWS]], %[[W]], %[[B]]) {{.*}} -> tensor<?x128xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    %[[Q:.*]], %[[K:.*]] = graph.split(%[[WIDE]]) {axis = 1 : i64} : (tensor<?x128xf32, #graph.dims<["seq"]>>) -> (tensor<?x64xf32, #graph.dims<["seq"]>>, tensor<?x64xf32, #graph.dims<["seq"]>>)
// CHECK-NEXT:    %[[QB:.*]] = graph.reshape(%[[Q]]) : (tensor<?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    %[[KB:.*]] = graph.reshape(%[[K]]) : (tensor<?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    func.return %[[QB]], %[[KB]]

// -----

// Bias, residual and Relu: one loop; the bias broadcasts along the symbolic rows.
func.func @residual(%x: tensor<1x?x64xf32, #graph.dims<["seq"]>>, %b: tensor<64xf32>, %r: tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>> {
  %a = graph.add(%x, %b) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<64xf32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %s = graph.add(%a, %r) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %y = graph.relu(%s) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  func.return %y : tensor<1x?x64xf32, #graph.dims<["seq"]>>
}
// ELTWISE-LABEL: func.func @residual(
// ELTWISE-NEXT:    %y = graph.fused_elementwise(%x, %b, %r) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<64xf32>, tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>> {
// ELTWISE-NEXT:    ^bb0(%0: f32, %1: f32, %2: f32):
// ELTWISE-NEXT:      %3 = arith.addf %0, %1 : f32
// ELTWISE-NEXT:      %4 = arith.addf %3, %2 : f32
// ELTWISE-NEXT:      %5 = arith.constant 0.000000e+00 : f32
// ELTWISE-NEXT:      %6 = arith.maximumf %4, %5 : f32
// ELTWISE-NEXT:      graph.yield %6 : f32
// ELTWISE-NEXT:    }
// ELTWISE-NEXT:    func.return %y

// -----

// A Relu after a MatMul becomes its epilogue.
func.func @epilogue(%x: tensor<1x?x64xf32, #graph.dims<["seq"]>>, %w: tensor<64x64xf32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>> {
  %m = graph.matmul(%x, %w) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<64x64xf32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %y = graph.relu(%m) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  func.return %y : tensor<1x?x64xf32, #graph.dims<["seq"]>>
}
// CHECK-LABEL: func.func @epilogue(
// CHECK-NEXT:    %y = graph.matmul(%x, %w) {activation = "relu"} : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<64x64xf32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
// CHECK-NEXT:    func.return %y

// -----

// Equal ops on values of one symbolic type are merged (types compare structurally).
func.func @common(%x: tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>> {
  %a = graph.sigmoid(%x) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %b = graph.sigmoid(%x) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %y = graph.mul(%a, %b) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  func.return %y : tensor<1x?x64xf32, #graph.dims<["seq"]>>
}
// CHECK-LABEL: func.func @common(
// CHECK-NEXT:    %a = graph.sigmoid(%x)
// CHECK-NEXT:    %y = graph.mul(%a, %a)
// CHECK-NEXT:    func.return %y

// -----

// Split into heads and back: the Transposes cancel, then the two Reshapes.
func.func @heads_round_trip(%x: tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>> {
  %r = graph.reshape(%x) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x2x32xf32, #graph.dims<["seq"]>>
  %t = graph.transpose(%r) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x?x2x32xf32, #graph.dims<["seq"]>>) -> tensor<1x2x?x32xf32, #graph.dims<["seq"]>>
  %u = graph.transpose(%t) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x?x32xf32, #graph.dims<["seq"]>>) -> tensor<1x?x2x32xf32, #graph.dims<["seq"]>>
  %y = graph.reshape(%u) : (tensor<1x?x2x32xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  func.return %y : tensor<1x?x64xf32, #graph.dims<["seq"]>>
}
// CHECK-LABEL: func.func @heads_round_trip(
// CHECK-NEXT:    func.return %x

// -----

// x + (-0.0), 1 * x and a Slice [0, INT64_MAX) of the symbolic axis leave x unchanged.
func.func @identities(%x: tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>> {
  %z = graph.constant {value = dense<-0.000000e+00> : tensor<f32>} : tensor<f32>
  %one = graph.constant {value = dense<1.000000e+00> : tensor<64xf32>} : tensor<64xf32>
  %a = graph.add(%x, %z) : (tensor<1x?x64xf32, #graph.dims<["seq"]>>, tensor<f32>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %m = graph.mul(%one, %a) : (tensor<64xf32>, tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %y = graph.slice(%m) {starts = array<i64: 0>, ends = array<i64: 9223372036854775807>, axes = array<i64: 1>, steps = array<i64: 1>} : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  func.return %y : tensor<1x?x64xf32, #graph.dims<["seq"]>>
}
// CHECK-LABEL: func.func @identities(
// CHECK-NOT:     graph.slice
// CHECK:         func.return %x

// -----

// ReduceMean over every spatial axis of an image of symbolic height and width.
func.func @spatial_mean(%x: tensor<1x4x?x?xf32, #graph.dims<["h", "w"]>>) -> tensor<1x4x1x1xf32> {
  %y = graph.reduce_mean(%x) {axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<1x4x?x?xf32, #graph.dims<["h", "w"]>>) -> tensor<1x4x1x1xf32>
  func.return %y : tensor<1x4x1x1xf32>
}
// CHECK-LABEL: func.func @spatial_mean(
// CHECK-NEXT:    %y = graph.global_average_pool(%x) : (tensor<1x4x?x?xf32, #graph.dims<["h", "w"]>>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    func.return %y

// -----

// mean(x + 2) = mean(x) + 2 whatever seq is; sum(x + 3) = sum(x) + 3 * seq needs a number:
// left alone.
func.func @shifts(%x: tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> (tensor<1x1x64xf32>, tensor<1x1x64xf32>) {
  %a = graph.add_scalar(%x) {scalar = 2.0 : f64} : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %mean = graph.reduce_mean(%a) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x1x64xf32>
  %b = graph.add_scalar(%x) {scalar = 3.0 : f64} : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x?x64xf32, #graph.dims<["seq"]>>
  %sum = graph.reduce_sum(%b) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x1x64xf32>
  func.return %mean, %sum : tensor<1x1x64xf32>, tensor<1x1x64xf32>
}
// CHECK-LABEL: func.func @shifts(
// CHECK-NEXT:    %[[MEAN:.*]] = graph.reduce_mean(%x) {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<1x?x64xf32, #graph.dims<["seq"]>>) -> tensor<1x1x64xf32>
// CHECK-NEXT:    %[[SHIFTED:.*]] = graph.add_scalar(%[[MEAN]]) {scalar = 2.000000e+00 : f64}
// CHECK-NEXT:    %b = graph.add_scalar(%x) {scalar = 3.000000e+00 : f64}
// CHECK-NEXT:    %sum = graph.reduce_sum(%b)
// CHECK-NEXT:    func.return %[[SHIFTED]], %sum

// -----

// A dilated conv: on a 4x4 image its outer taps read only padding and are dropped; on an
// image of symbolic size which taps are live is unknown, so the conv stays as it is.
// assign-layout gives both NHWC (the layout of a symbolic type is in its #graph.dims).
func.func @dilated(%x: tensor<1x4x?x?xf32, #graph.dims<["h", "w"]>>, %s: tensor<1x4x4x4xf32>) -> (tensor<1x4x?x?xf32, #graph.dims<["h", "w"]>>, tensor<1x4x4x4xf32>) {
  %w = graph.constant {value = dense<0.5> : tensor<4x4x3x3xf32>} : tensor<4x4x3x3xf32>
  %y = graph.conv(%x, %w) {dilations = array<i64: 8, 8>, group = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 8, 8, 8, 8>, strides = array<i64: 1, 1>} : (tensor<1x4x?x?xf32, #graph.dims<["h", "w"]>>, tensor<4x4x3x3xf32>) -> tensor<1x4x?x?xf32, #graph.dims<["h", "w"]>>
  %z = graph.conv(%s, %w) {dilations = array<i64: 8, 8>, group = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 8, 8, 8, 8>, strides = array<i64: 1, 1>} : (tensor<1x4x4x4xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return %y, %z : tensor<1x4x?x?xf32, #graph.dims<["h", "w"]>>, tensor<1x4x4x4xf32>
}
// CHECK-LABEL: func.func @dilated(
// CHECK:         %y = graph.conv(%x, %w) {{.*}}pads = array<i64: 8, 8, 8, 8>{{.*}} : (tensor<1x4x?x?xf32, #graph.dims<["h", "w"]>>, tensor<4x4x3x3xf32>) -> tensor<1x4x?x?xf32, #graph.dims<["h", "w"]>>
// CHECK:         %z = graph.conv(%s, %{{.*}}) {{.*}}pads = array<i64: 0, 0, 0, 0>{{.*}} : (tensor<1x4x4x4xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x4x4xf32>
// LAYOUT-LABEL: func.func @dilated(
// LAYOUT:         %[[X:.*]] = layout.convert %x : tensor<1x4x?x?xf32, #graph.dims<["h", "w"]>> -> tensor<1x4x?x?xf32, #graph.dims<["h", "w"], "NHWC">>
// LAYOUT-NEXT:    %y = graph.conv(%[[X]], %w) {{.*}} : (tensor<1x4x?x?xf32, #graph.dims<["h", "w"], "NHWC">>, tensor<4x4x3x3xf32>) -> tensor<1x4x?x?xf32, #graph.dims<["h", "w"], "NHWC">>
// LAYOUT:         layout.convert %s
// LAYOUT:         graph.conv({{.*}}#layout.spec<"NHWC">>
