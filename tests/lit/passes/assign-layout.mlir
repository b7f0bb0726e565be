// RUN: onnxc-opt %s -p "assign-layout{vector-bits=512}" --split-input-file | filecheck %s
// RUN: onnxc-opt %s -p "assign-layout{vector-bits=64}" --split-input-file | filecheck %s --check-prefix=SCALAR
// RUN: onnxc-opt %s -p "assign-layout{vector-bits=512 everywhere=true}" --split-input-file | filecheck %s --check-prefix=ALL

// ResNet-style block: exactly two conversions, the model input and before the Flatten.
func.func @resnet_block(%x: tensor<1x3x8x8xf32>) -> tensor<1x10xf32> {
  %w0 = graph.constant {value = dense<0.5> : tensor<4x3x3x3xf32>} : tensor<4x3x3x3xf32>
  %w1 = graph.constant {value = dense<0.25> : tensor<4x4x3x3xf32>} : tensor<4x4x3x3xf32>
  %wg = graph.constant {value = dense<0.1> : tensor<10x64xf32>} : tensor<10x64xf32>
  %0 = graph.conv(%x, %w0) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %1 = graph.relu(%0) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %2 = graph.conv(%1, %w1) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %3 = graph.add(%2, %1) : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %4 = graph.relu(%3) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %5 = graph.max_pool(%4) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %6 = graph.flatten(%5) {axis = 1 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>
  %7 = graph.gemm(%6, %wg) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<1x64xf32>, tensor<10x64xf32>) -> tensor<1x10xf32>
  func.return %7 : tensor<1x10xf32>
}
// CHECK-LABEL: func.func @resnet_block(
// CHECK:         %[[IN:.*]] = layout.convert %x : tensor<1x3x8x8xf32> -> tensor<1x3x8x8xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[C0:.*]] = graph.conv(%[[IN]], %w0) {{.*}} : (tensor<1x3x8x8xf32, #layout.spec<"NHWC">>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[R0:.*]] = graph.relu(%[[C0]]) : (tensor<1x4x8x8xf32, #layout.spec<"NHWC">>) -> tensor<1x4x8x8xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[C1:.*]] = graph.conv(%[[R0]], %w1)
// CHECK-NEXT:    %[[A:.*]] = graph.add(%[[C1]], %[[R0]]) {{.*}} -> tensor<1x4x8x8xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[R1:.*]] = graph.relu(%[[A]])
// CHECK-NEXT:    %[[P:.*]] = graph.max_pool(%[[R1]]) {{.*}} -> tensor<1x4x4x4xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[OUT:.*]] = layout.convert %[[P]] : tensor<1x4x4x4xf32, #layout.spec<"NHWC">> -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %[[F:.*]] = graph.flatten(%[[OUT]]) {{.*}} : (tensor<1x4x4x4xf32>) -> tensor<1x64xf32>
// CHECK-NEXT:    graph.gemm(%[[F]], %wg) {{.*}} : (tensor<1x64xf32>, tensor<10x64xf32>) -> tensor<1x10xf32>
// CHECK-NOT:     layout.convert
// SCALAR-LABEL: func.func @resnet_block(
// SCALAR-NOT:    layout
// SCALAR:        func.return

// -----

// A conv feeding a Reshape: converted back right before it; the output stays plain.
func.func @conv_reshape(%x: tensor<1x2x4x4xf32>) -> tensor<1x32xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %0 = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %1 = graph.reshape(%0) : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32>
  func.return %1 : tensor<1x32xf32>
}
// CHECK-LABEL: func.func @conv_reshape(
// CHECK:         %[[C:.*]] = graph.conv({{.*}}) {{.*}} -> tensor<1x2x4x4xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[P:.*]] = layout.convert %[[C]] : tensor<1x2x4x4xf32, #layout.spec<"NHWC">> -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.reshape(%[[P]]) : (tensor<1x2x4x4xf32>) -> tensor<1x32xf32>
// CHECK-NEXT:    func.return %[[R]]

// -----

// A per-channel bias constant of rank 3 is re-laid at compile time as an NHWC [1, C, 1, 1]
// constant (its data in memory order, here the same); a value needed in both layouts (%x,
// by the conv and the concat in NHWC, by the transpose plain) is converted once.
func.func @bias_and_shared(%x: tensor<1x2x3x3xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = graph.constant {value = dense<1.0> : tensor<2x2x1x1xf32>} : tensor<2x2x1x1xf32>
  %b = graph.constant {value = dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %0 = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = graph.add(%0, %b) : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %2 = graph.concat(%1, %x) {axis = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  %3 = graph.transpose(%x) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %2, %3 : tensor<1x4x3x3xf32>, tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @bias_and_shared(
// CHECK:         %[[X:.*]] = layout.convert %x : tensor<1x2x3x3xf32> -> tensor<1x2x3x3xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[C:.*]] = graph.conv(%[[X]], %w)
// CHECK-NEXT:    %[[B:.*]] = graph.constant {value = dense<{{.*}}1.000000e+00{{.*}}2.000000e+00{{.*}}> : tensor<1x2x1x1xf32, #layout.spec<"NHWC">>}
// CHECK-NEXT:    %[[A:.*]] = graph.add(%[[C]], %[[B]])
// CHECK-NEXT:    %[[CAT:.*]] = graph.concat(%[[A]], %[[X]]) {{.*}} -> tensor<1x4x3x3xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose(%x)
// CHECK-NEXT:    %[[OUT:.*]] = layout.convert %[[CAT]] : tensor<1x4x3x3xf32, #layout.spec<"NHWC">> -> tensor<1x4x3x3xf32>
// CHECK-NEXT:    func.return %[[OUT]], %[[T]]

// -----

// GlobalAveragePool's [N, C, 1, 1] is the same memory in NHWC and NCHW: the way back to
// plain is a view (graph.reshape), not a conversion.
func.func @global_pool_view(%x: tensor<1x4x5x5xf32>) -> tensor<1x4xf32> {
  %w = graph.constant {value = dense<1.0> : tensor<4x4x1x1xf32>} : tensor<4x4x1x1xf32>
  %0 = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x5x5xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x5x5xf32>
  %1 = graph.global_average_pool(%0) : (tensor<1x4x5x5xf32>) -> tensor<1x4x1x1xf32>
  %2 = graph.flatten(%1) {axis = 1 : i64} : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
  func.return %2 : tensor<1x4xf32>
}
// CHECK-LABEL: func.func @global_pool_view(
// CHECK:         %[[G:.*]] = graph.global_average_pool(%{{.*}}) : (tensor<1x4x5x5xf32, #layout.spec<"NHWC">>) -> tensor<1x4x1x1xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[V:.*]] = graph.reshape(%[[G]]) : (tensor<1x4x1x1xf32, #layout.spec<"NHWC">>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    graph.flatten(%[[V]])
// CHECK-NOT:     layout.convert

// -----

// Negative: no convolution, nothing changes (an NHWC-capable op alone stays plain).
func.func @no_conv(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32> {
  %0 = graph.relu(%x) : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %1 = graph.max_pool(%0) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x4x4x4xf32>) -> tensor<1x4x2x2xf32>
  func.return %1 : tensor<1x4x2x2xf32>
}
// CHECK-LABEL: func.func @no_conv(
// CHECK-NOT:     layout
// CHECK:         func.return
// With everywhere=true (a testing option) they run in NHWC.
// ALL-LABEL: func.func @no_conv(
// ALL-NEXT:    %0 = layout.convert %x
// ALL-NEXT:    %1 = graph.relu(%0) {{.*}} -> tensor<1x4x4x4xf32, #layout.spec<"NHWC">>
// ALL-NEXT:    %2 = graph.max_pool(%1) {{.*}} -> tensor<1x4x2x2xf32, #layout.spec<"NHWC">>
// ALL-NEXT:    %3 = layout.convert %2 {{.*}} -> tensor<1x4x2x2xf32>
// ALL-NEXT:    func.return %3

// -----

// Negative: a 1-D convolution whose weight is not a constant (the NHWC kernels pack it at
// compile time) and an f64 one keep their plain layouts.
func.func @not_2d_f32(%x: tensor<1x2x8xf32>, %y: tensor<1x2x4x4xf64>, %w: tensor<2x2x1xf32>) -> (tensor<1x2x8xf32>, tensor<1x2x4x4xf64>) {
  %v = graph.constant {value = dense<1.0> : tensor<2x2x1x1xf64>} : tensor<2x2x1x1xf64>
  %0 = graph.conv(%x, %w) {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, group = 1 : i64} : (tensor<1x2x8xf32>, tensor<2x2x1xf32>) -> tensor<1x2x8xf32>
  %1 = graph.conv(%y, %v) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf64>, tensor<2x2x1x1xf64>) -> tensor<1x2x4x4xf64>
  func.return %0, %1 : tensor<1x2x8xf32>, tensor<1x2x4x4xf64>
}
// CHECK-LABEL: func.func @not_2d_f32(
// CHECK-NOT:     layout
// CHECK:         func.return

// -----

// Negative: a conv whose weight is computed at run time has no NHWC kernel.
func.func @runtime_weight(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %0 = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %0 : tensor<1x2x4x4xf32>
}
// CHECK-LABEL: func.func @runtime_weight(
// CHECK-NOT:     layout
// CHECK:         func.return

// -----

// A channel Split (horizontal fusion's sibling convs) stays in NHWC; a 1-channel result is
// the same memory in both layouts, so its way out is a view.
func.func @split(%x: tensor<1x2x4x4xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x1x4x4xf32>) {
  %w = graph.constant {value = dense<1.0> : tensor<4x2x1x1xf32>} : tensor<4x2x1x1xf32>
  %0 = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
  %1, %2 = graph.split(%0) {axis = 1 : i64} : (tensor<1x4x4x4xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x1x4x4xf32>)
  %3 = graph.relu(%1) : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  func.return %3, %2 : tensor<1x3x4x4xf32>, tensor<1x1x4x4xf32>
}
// CHECK-LABEL: func.func @split(
// CHECK:         %[[C:.*]] = graph.conv
// CHECK-NEXT:    %[[A:.*]], %[[B:.*]] = graph.split(%[[C]]) {{.*}} -> (tensor<1x3x4x4xf32, #layout.spec<"NHWC">>, tensor<1x1x4x4xf32, #layout.spec<"NHWC">>)
// CHECK-NEXT:    %[[R:.*]] = graph.relu(%[[A]])
// CHECK-NEXT:    %[[O1:.*]] = layout.convert %[[R]]
// CHECK-NEXT:    %[[O2:.*]] = graph.reshape(%[[B]]) : (tensor<1x1x4x4xf32, #layout.spec<"NHWC">>) -> tensor<1x1x4x4xf32>
// CHECK-NEXT:    func.return %[[O1]], %[[O2]]

// -----

// An If's branches read a conv's result in the plain layout: one conversion before the If
// (its regions are not laid out).
func.func @if_reads_conv(%x: tensor<1x3x8x8xf32>, %b: tensor<i1>) -> tensor<1x4x8x8xf32> {
  %w = graph.constant {value = dense<0.5> : tensor<4x3x3x3xf32>} : tensor<4x3x3x3xf32>
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  %y = graph.if(%b) {
    %t = graph.relu(%c) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    graph.yield %t : tensor<1x4x8x8xf32>
  } else {
    %e = graph.sigmoid(%c) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    graph.yield %e : tensor<1x4x8x8xf32>
  } : (tensor<i1>) -> tensor<1x4x8x8xf32>
  func.return %y : tensor<1x4x8x8xf32>
}
// CHECK-LABEL: func.func @if_reads_conv(
// CHECK:         %[[C:.*]] = graph.conv({{.*}} -> tensor<1x4x8x8xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[P:.*]] = layout.convert %[[C]] : tensor<1x4x8x8xf32, #layout.spec<"NHWC">> -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %y = graph.if(%b) {
// CHECK-NEXT:      %t = graph.relu(%[[P]]) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK:           %e = graph.sigmoid(%[[P]]) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>

// -----

// A 1-D conv (here with a bias, a residual and an activation) becomes a 2-D conv over a
// height of 1 (passes/conv1d_as_2d.py): input and residual unsqueezed at axis 2, the weight
// a new [M, C, 1, K] constant, strides / pads / dilations with a leading 1 / 0 / 1; the 2-D
// conv then gets NHWC like any other, and the result is squeezed back. Without SIMD nothing
// changes.
func.func @conv1d(%x: tensor<1x8x20xf32>, %z: tensor<1x16x10xf32>) -> tensor<1x16x10xf32> {
  %w = graph.constant {value = dense<0.5> : tensor<16x8x3xf32>} : tensor<16x8x3xf32>
  %b = graph.constant {value = dense<0.25> : tensor<16xf32>} : tensor<16xf32>
  %y = graph.conv_add(%x, %w, %b, %z) {strides = array<i64: 2>, pads = array<i64: 1, 0>, dilations = array<i64: 1>, group = 1 : i64, activation = "gelu"} : (tensor<1x8x20xf32>, tensor<16x8x3xf32>, tensor<16xf32>, tensor<1x16x10xf32>) -> tensor<1x16x10xf32>
  func.return %y : tensor<1x16x10xf32>
}
// CHECK-LABEL: func.func @conv1d(
// CHECK-NOT:     tensor<16x8x3xf32>
// CHECK:         %[[X4:.*]] = graph.unsqueeze(%x) {axes = array<i64: 2>} : (tensor<1x8x20xf32>) -> tensor<1x8x1x20xf32>
// CHECK-NEXT:    %[[W4:.*]] = graph.constant {value = dense<5.000000e-01> : tensor<16x8x1x3xf32>}
// CHECK-NEXT:    %[[Z4:.*]] = graph.unsqueeze(%z) {axes = array<i64: 2>} : (tensor<1x16x10xf32>) -> tensor<1x16x1x10xf32>
// CHECK-NEXT:    %[[XN:.*]] = layout.convert %[[X4]] : tensor<1x8x1x20xf32> -> tensor<1x8x1x20xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[ZN:.*]] = layout.convert %[[Z4]]
// CHECK-NEXT:    %[[C:.*]] = graph.conv_add(%[[XN]], %[[W4]], %b, %[[ZN]]) {strides = array<i64: 1, 2>, pads = array<i64: 0, 1, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "gelu"} {{.*}} -> tensor<1x16x1x10xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[P:.*]] = layout.convert %[[C]] : tensor<1x16x1x10xf32, #layout.spec<"NHWC">> -> tensor<1x16x1x10xf32>
// CHECK-NEXT:    %y = graph.squeeze(%[[P]]) {axes = array<i64: 2>} : (tensor<1x16x1x10xf32>) -> tensor<1x16x10xf32>
// SCALAR-LABEL: func.func @conv1d(
// SCALAR-NEXT:    graph.constant
// SCALAR-NEXT:    graph.constant
// SCALAR-NEXT:    graph.conv_add(%x, %w, %b, %z) {{.*}} -> tensor<1x16x10xf32>

// -----

// ConvNeXt's block: channels-last work between a permute of the conv's output and one
// back. The permute back (0, 3, 1, 2) of a plain [N, H, W, C] starts NHWC (its result is
// the input's buffer), so the residual Add and the next conv take it without a
// conversion; the permute of the NHWC conv output still reads it converted to plain (the
// view fold-layout-converts makes of that pair is tested there).
func.func @channels_last_block(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %w = graph.constant {value = dense<0.5> : tensor<8x1x3x3xf32>} : tensor<8x1x3x3xf32>
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  %t = graph.transpose(%c) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x8x4x4xf32>) -> tensor<1x4x4x8xf32>
  %s = graph.softmax(%t) {axis = 3 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %b = graph.transpose(%s) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %a = graph.add(%b, %x) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  %y = graph.conv(%a, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<1x8x4x4xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  func.return %y : tensor<1x8x4x4xf32>
}
// CHECK-LABEL: func.func @channels_last_block(
// CHECK:         %[[C:.*]] = graph.conv({{.*}}) {{.*}} -> tensor<1x8x4x4xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[P:.*]] = layout.convert %[[C]] : tensor<1x8x4x4xf32, #layout.spec<"NHWC">> -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose(%[[P]]) {{.*}} : (tensor<1x8x4x4xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.softmax(%[[T]])
// CHECK-NEXT:    %[[B:.*]] = graph.transpose(%[[S]]) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %[[A:.*]] = graph.add(%[[B]], %{{.*}}) {{.*}} -> tensor<1x8x4x4xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    graph.conv(%[[A]], %w) {{.*}} : (tensor<1x8x4x4xf32, #layout.spec<"NHWC">>, tensor<8x1x3x3xf32>)
// SCALAR-LABEL: func.func @channels_last_block(
// SCALAR-NOT:    layout
// SCALAR:        func.return

// -----

// Negative: a permute back whose result a plain-only op (Reshape) reads stays a plain
// transpose: starting NHWC would only move its copy to a conversion.
func.func @channels_first_to_reshape(%x: tensor<1x4x4x8xf32>) -> tensor<1x128xf32> {
  %b = graph.transpose(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %r = graph.reshape(%b) : (tensor<1x8x4x4xf32>) -> tensor<1x128xf32>
  func.return %r : tensor<1x128xf32>
}
// CHECK-LABEL: func.func @channels_first_to_reshape(
// CHECK-NOT:     layout
// CHECK:         func.return
