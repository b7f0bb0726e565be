// RUN: onnxc-opt %s --split-input-file -p convert-graph-to-loops | filecheck %s

// The loop structure of representative kernels: innermost loops run over the contiguous
// dimension, carry reductions in iter_args, and hold no scf.if.

// Unary ops run one flat loop over the buffer.
func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = graph.sigmoid(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func private @sigmoid_0(%0: memref<2x3xf32>, %1: memref<2x3xf32>) attributes {onnxc.kernel = "graph.sigmoid"} {
// CHECK:         %[[X:.*]] = memref.reinterpret_cast %0 to offset: [0], sizes: [6], strides: [1] : memref<2x3xf32> to memref<6xf32>
// CHECK-NEXT:    %[[Y:.*]] = memref.reinterpret_cast %1 to offset: [0], sizes: [6], strides: [1] : memref<2x3xf32> to memref<6xf32>
// CHECK-NEXT:    scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[V:.*]] = memref.load %[[X]][%[[I]]] : memref<6xf32>
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[V]] : f32
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[N]] : f32
// CHECK-NEXT:      %[[D:.*]] = arith.addf %{{.*}}, %[[E]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.divf %{{.*}}, %[[D]] : f32
// CHECK-NEXT:      memref.store %[[R]], %[[Y]][%[[I]]] : memref<6xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// -----

// A per-channel bias over NCHW collapses to [C, H*W]: the bias load is invariant in the
// contiguous inner loop.
func.func @main(%x: tensor<1x4x3x3xf32>, %b: tensor<4x1x1xf32>) -> tensor<1x4x3x3xf32> {
  %y = graph.add(%x, %b) : (tensor<1x4x3x3xf32>, tensor<4x1x1xf32>) -> tensor<1x4x3x3xf32>
  func.return %y : tensor<1x4x3x3xf32>
}

// CHECK-LABEL: func.func private @add_0(
// CHECK:         %[[X:.*]] = memref.reinterpret_cast %0 {{.*}} to memref<4x9xf32>
// CHECK-NEXT:    %[[B:.*]] = memref.reinterpret_cast %1 {{.*}} to memref<4x1xf32>
// CHECK-NEXT:    %[[Y:.*]] = memref.reinterpret_cast %2 {{.*}} to memref<4x9xf32>
// CHECK-NEXT:    scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        %[[XV:.*]] = memref.load %[[X]][%[[C]], %[[S]]] : memref<4x9xf32>
// CHECK-NEXT:        %[[BV:.*]] = memref.load %[[B]][%[[C]], %{{.*}}] : memref<4x1xf32>
// CHECK-NEXT:        %[[R:.*]] = arith.addf %[[XV]], %[[BV]] : f32
// CHECK-NEXT:        memref.store %[[R]], %[[Y]][%[[C]], %[[S]]] : memref<4x9xf32>

// -----

// Conv: the output plane starts as the bias; per kernel offset, the valid output range is
// computed before the spatial loops, whose innermost body is a branch-free fma.
func.func @main(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x3x3xf32> {
  %y = graph.conv(%x, %w, %b) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  func.return %y : tensor<1x4x3x3xf32>
}

// CHECK-LABEL: func.func private @conv_0(%0: memref<1x4x5x5xf32>, %1: memref<4x2x3x3xf32>, %2: memref<4xf32>, %3: memref<1x4x3x3xf32>) attributes {onnxc.kernel = "graph.conv"} {
// CHECK:         scf.for %[[G:.*]] = {{.*}} {
// CHECK-NEXT:      scf.for %[[M:.*]] = {{.*}} {
// CHECK:             %[[OC:.*]] = arith.addi %{{.*}}, %[[M]] : index
// CHECK-NEXT:        %[[BIAS:.*]] = memref.load %2[%[[OC]]] : memref<4xf32>
// CHECK:               memref.store %[[BIAS]], %3[%{{.*}}, %[[OC]], %{{.*}}, %{{.*}}]
// CHECK:             scf.for %[[C:.*]] = {{.*}} {
// CHECK:               scf.for %[[KH:.*]] = {{.*}} {
// CHECK-NEXT:            scf.for %[[KW:.*]] = {{.*}} {
// CHECK-NEXT:              %[[W:.*]] = memref.load %1[%[[OC]], %[[C]], %[[KH]], %[[KW]]] : memref<4x2x3x3xf32>
// CHECK:                   arith.divsi
// CHECK:                   scf.for %[[OH:.*]] = %[[LO:.*]] to %[[HI:.*]] step
// CHECK-NEXT:                scf.for %[[OW:.*]] = {{.*}} {
// CHECK-NOT:                   scf.if
// CHECK:                       %[[ACC:.*]] = memref.load %3[%{{.*}}, %[[OC]], %[[OH]], %[[OW]]]
// CHECK-NEXT:                  %[[XV:.*]] = memref.load %0[
// CHECK-NEXT:                  %[[R:.*]] = math.fma %[[W]], %[[XV]], %[[ACC]] : f32
// CHECK-NEXT:                  memref.store %[[R]], %3[%{{.*}}, %[[OC]], %[[OH]], %[[OW]]]

// -----

// MatMul in i-k-j order: zero the row, then one scalar of A scales a row of B into it.
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %y = graph.matmul(%a, %b) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK-LABEL: func.func private @matmul_0(%0: memref<2x3xf32>, %1: memref<3x4xf32>, %2: memref<2x4xf32>) attributes {onnxc.kernel = "graph.matmul"} {
// CHECK:         scf.for %[[I:.*]] = {{.*}} {
// CHECK-NEXT:      scf.for %[[J0:.*]] = {{.*}} {
// CHECK-NEXT:        memref.store %{{.*}}, %2[%[[I]], %[[J0]]] : memref<2x4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.for %[[K:.*]] = {{.*}} {
// CHECK-NEXT:        %[[A:.*]] = memref.load %0[%[[I]], %[[K]]] : memref<2x3xf32>
// CHECK-NEXT:        scf.for %[[J:.*]] = {{.*}} {
// CHECK-NEXT:          %[[Y:.*]] = memref.load %2[%[[I]], %[[J]]] : memref<2x4xf32>
// CHECK-NEXT:          %[[B:.*]] = memref.load %1[%[[K]], %[[J]]] : memref<3x4xf32>
// CHECK-NEXT:          %[[R:.*]] = math.fma %[[A]], %[[B]], %[[Y]] : f32
// CHECK-NEXT:          memref.store %[[R]], %2[%[[I]], %[[J]]] : memref<2x4xf32>

// -----

// Gemm with transB: a dot product of two contiguous rows in iter_args, then alpha and
// beta * C.
func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>, %c: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = graph.gemm(%a, %b, %c) {alpha = 2.0 : f32, beta = 0.5 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// CHECK-LABEL: func.func private @gemm_0(
// CHECK:         scf.for %[[I:.*]] = {{.*}} {
// CHECK-NEXT:      scf.for %[[J:.*]] = {{.*}} {
// CHECK-NEXT:        %[[DOT:.*]] = scf.for %[[K:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:          %[[A:.*]] = memref.load %0[%[[I]], %[[K]]] : memref<2x3xf32>
// CHECK-NEXT:          %[[B:.*]] = memref.load %1[%[[J]], %[[K]]] : memref<4x3xf32>
// CHECK-NEXT:          %[[P:.*]] = arith.mulf %[[A]], %[[B]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:          %[[S:.*]] = arith.addf %[[ACC]], %[[P]] fastmath<reassoc,contract> : f32
// CHECK-NEXT:          scf.yield %[[S]] : f32
// CHECK-NEXT:        }
// CHECK-NEXT:        %[[SCALED:.*]] = arith.mulf %[[DOT]], %{{.*}} : f32
// CHECK-NEXT:        %[[C:.*]] = memref.load %2[%[[J]]] : memref<4xf32>
// CHECK-NEXT:        %[[BC:.*]] = arith.mulf %[[C]], %{{.*}} : f32
// CHECK-NEXT:        %[[R:.*]] = arith.addf %[[SCALED]], %[[BC]] : f32
// CHECK-NEXT:        memref.store %[[R]], %3[%[[I]], %[[J]]] : memref<2x4xf32>

// -----

// MaxPool: the output starts at -inf and takes the maximum over each window offset's
// valid range.
func.func @main(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %y = graph.max_pool(%x) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, ceil_mode = 0 : i64, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}

// CHECK-LABEL: func.func private @max_pool_0(
// CHECK:         %[[LOW:.*]] = arith.constant 0xff800000 : f32
// CHECK:             memref.store %[[LOW]], %1
// CHECK:                 scf.for %[[OW:.*]] = {{.*}} {
// CHECK-NOT:               scf.if
// CHECK:                   %[[ACC:.*]] = memref.load %1
// CHECK-NEXT:              %[[XV:.*]] = memref.load %0
// CHECK-NEXT:              %[[M:.*]] = arith.maximumf %[[ACC]], %[[XV]] : f32
// CHECK-NEXT:              memref.store %[[M]], %1

// -----

// Softmax: maximum, then exponentials and their sum (reassociable, so it vectorizes), both
// in iter_args, then a scale.
func.func @main(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %y = graph.softmax(%x) {axis = -1 : i64} : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %y : tensor<3x5xf32>
}

// CHECK-LABEL: func.func private @softmax_0(
// CHECK:         %[[MAX:.*]] = scf.for {{.*}} iter_args(%[[M:.*]] = %{{.*}}) -> (f32) {
// CHECK:           arith.maximumf %[[M]], %{{.*}} : f32
// CHECK:         %[[SUM:.*]] = scf.for {{.*}} iter_args(%[[T:.*]] = %{{.*}}) -> (f32) {
// CHECK:           %[[SHIFT:.*]] = arith.subf %{{.*}}, %[[MAX]] : f32
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[SHIFT]] : f32
// CHECK-NEXT:      memref.store %[[E]]
// CHECK-NEXT:      arith.addf %[[T]], %[[E]] fastmath<reassoc,contract> : f32
// CHECK:         %[[INV:.*]] = arith.divf %{{.*}}, %[[SUM]] : f32
// CHECK:           arith.mulf %{{.*}}, %[[INV]] : f32

// -----

// Transpose NCHW -> NHWC keeps H and W together: a 2-D transpose of [C, H*W].
func.func @main(%x: tensor<1x4x3x2xf32>) -> tensor<1x3x2x4xf32> {
  %y = graph.transpose(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x4x3x2xf32>) -> tensor<1x3x2x4xf32>
  func.return %y : tensor<1x3x2x4xf32>
}

// CHECK-LABEL: func.func private @transpose_0(
// CHECK:         %[[X:.*]] = memref.reinterpret_cast %0 {{.*}} to memref<4x6xf32>
// CHECK-NEXT:    %[[Y:.*]] = memref.reinterpret_cast %1 {{.*}} to memref<6x4xf32>
// CHECK-NEXT:    scf.for %[[S:.*]] = {{.*}} {
// CHECK-NEXT:      scf.for %[[C:.*]] = {{.*}} {
// CHECK-NEXT:        %[[V:.*]] = memref.load %[[X]][%[[C]], %[[S]]] : memref<4x6xf32>
// CHECK-NEXT:        memref.store %[[V]], %[[Y]][%[[S]], %[[C]]] : memref<6x4xf32>

// -----

// Gather wraps negative indices with a select, outside the contiguous copy, and clamps the
// row into range (the indices were checked before the call; the clamp holds whatever the data).
func.func @main(%x: tensor<5x3xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  %y = graph.gather(%x, %i) {axis = 0 : i64} : (tensor<5x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func private @gather_0(
// CHECK:         scf.for %[[N:.*]] = {{.*}} {
// CHECK-NEXT:      %[[RAW:.*]] = memref.load %1[%[[N]]] : memref<2xi64>
// CHECK-NEXT:      %[[IDX:.*]] = arith.index_cast %[[RAW]] : i64 to index
// CHECK-NEXT:      %[[NEG:.*]] = arith.cmpi slt, %[[IDX]], %{{.*}} : index
// CHECK-NEXT:      %[[UP:.*]] = arith.addi %[[IDX]], %{{.*}} : index
// CHECK-NEXT:      %[[WRAP:.*]] = arith.select %[[NEG]], %[[UP]], %[[IDX]] : index
// CHECK-NEXT:      %[[IN:.*]] = arith.cmpi ult, %[[WRAP]], %{{.*}} : index
// CHECK-NEXT:      %[[ROW:.*]] = arith.select %[[IN]], %[[WRAP]], %{{.*}} : index
// CHECK-NEXT:      scf.for %[[Q:.*]] = {{.*}} {
// CHECK-NEXT:        %[[V:.*]] = memref.load %{{.*}}[%{{.*}}, %[[ROW]], %[[Q]]]
// CHECK-NEXT:        memref.store %[[V]]

// -----

// Cast f32 -> i64 truncates; i64 -> i1 compares with zero.
func.func @main(%x: tensor<4xf32>) -> tensor<4xi1> {
  %i = graph.cast(%x) : (tensor<4xf32>) -> tensor<4xi64>
  %b = graph.cast(%i) : (tensor<4xi64>) -> tensor<4xi1>
  func.return %b : tensor<4xi1>
}

// CHECK-LABEL: func.func private @cast_0(%0: memref<4xf32>, %1: memref<4xi64>)
// CHECK:         arith.fptosi %{{.*}} : f32 to i64
// CHECK-LABEL: func.func private @cast_1(%0: memref<4xi64>, %1: memref<4xi1>)
// CHECK:         arith.cmpi ne, %{{.*}}, %{{.*}} : i64

// -----

// Conv with stride 1 and rows as long in the output as in the input: one flat loop per
// kernel offset over the plane, with a column mask (a constant table passed by @main)
// selecting which outputs the offset touches.
func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32> {
  %y = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  func.return %y : tensor<1x3x4x4xf32>
}

// CHECK:       "memref.global"() <{sym_name = "cst_0", type = memref<3x16xi8>, initial_value = dense<{{\[}}[0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 0]]> : tensor<3x16xi8>, sym_visibility = "private", constant}> : () -> ()
// CHECK-LABEL: func.func private @conv_0(%0: memref<1x2x4x4xf32>, %1: memref<3x2x3x3xf32>, %2: memref<3x16xi8>, %3: memref<1x3x4x4xf32>) attributes {onnxc.kernel = "graph.conv"} {
// CHECK:         %[[X:.*]] = memref.reinterpret_cast %0 {{.*}} to memref<1x2x16xf32>
// CHECK-NEXT:    %[[Y:.*]] = memref.reinterpret_cast %3 {{.*}} to memref<1x3x16xf32>
// CHECK:               %[[W:.*]] = memref.load %1[%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[KW:[0-9]+]]] : memref<3x2x3x3xf32>
// CHECK:                 scf.for %[[F:.*]] = %[[FIRST:.*]] to %[[LAST:.*]] step %{{.*}} {
// CHECK-NEXT:              %[[ACC:.*]] = memref.load %[[Y]][%{{.*}}, %{{.*}}, %[[F]]] : memref<1x3x16xf32>
// CHECK-NEXT:              %[[XI:.*]] = arith.addi %[[F]], %{{.*}} : index
// CHECK-NEXT:              %[[XV:.*]] = memref.load %[[X]][%{{.*}}, %{{.*}}, %[[XI]]] : memref<1x2x16xf32>
// CHECK-NEXT:              %[[R:.*]] = math.fma %[[W]], %[[XV]], %[[ACC]] : f32
// CHECK-NEXT:              %[[M:.*]] = memref.load %2[%[[KW]], %[[F]]] : memref<3x16xi8>
// CHECK-NEXT:              %[[KEEP:.*]] = arith.cmpi ne, %[[M]], %{{.*}} : i8
// CHECK-NEXT:              %[[NEW:.*]] = arith.select %[[KEEP]], %[[R]], %[[ACC]] : f32
// CHECK-NEXT:              memref.store %[[NEW]], %[[Y]][%{{.*}}, %{{.*}}, %[[F]]] : memref<1x3x16xf32>
// CHECK-LABEL: func.func @main(%x: memref<1x2x4x4xf32>, %w: memref<3x2x3x3xf32>, %out0: memref<1x3x4x4xf32>) attributes {onnxc.entry} {
// CHECK-NEXT:    %table = memref.get_global @cst_0 : memref<3x16xi8>
// CHECK-NEXT:    func.call @conv_0(%x, %w, %table, %out0)
