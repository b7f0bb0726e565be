// RUN: onnxc-opt %s -p fuse-conv-add --split-input-file | filecheck %s

// A per-channel constant (1x2x1x1) added after a conv folds into its bias.
func.func @conv_add(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %b = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %k = graph.constant {value = dense<[[[[10.0]], [[20.0]]]]> : tensor<1x2x1x1xf32>} : tensor<1x2x1x1xf32>
  %c = graph.conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.add(%k, %c) : (tensor<1x2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @conv_add(
// CHECK:         %[[B:.*]] = graph.constant {value = dense<[1.100000e+01, 2.200000e+01]> : tensor<2xf32>}
// CHECK:         %[[Y:.*]] = graph.conv(%x, %{{.*}}, %[[B]])
// CHECK-NOT:     graph.add
// CHECK:         func.return %[[Y]]

// -----

// A constant that varies along W is not per channel: nothing fires.
func.func @conv_add_spatial(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = graph.constant {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : tensor<2x1x1x1xf32>
  %k = graph.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.add(%c, %k) : (tensor<1x2x3x3xf32>, tensor<3xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @conv_add_spatial(
// CHECK:         graph.conv(%x, %w)
// CHECK:         graph.add

// -----

// A residual addend of the conv's shape (Add, or ResNet's Sum of two): the conv kernel
// starts from it (graph.conv_add).
func.func @conv_add_residual(%x: tensor<1x1x3x3xf32>, %w: tensor<2x1x1x1xf32>, %b: tensor<2xf32>, %r: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %c = graph.conv(%x, %w, %b) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %y = graph.add(%r, %c) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %d = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %z = graph.sum(%d, %y) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %z : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @conv_add_residual(
// CHECK-NEXT:    %y = graph.conv_add(%x, %w, %b, %r) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %z = graph.conv_add(%x, %w, %y) {{.*}} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    func.return %z

// -----

// An addend that the Add broadcasts up to the result, a conv result used twice, and a conv
// that already has an epilogue (relu(conv) + z is not relu(conv + z)) stay adds.
func.func @conv_add_keep(%x: tensor<1x1x3x3xf32>, %w: tensor<2x1x1x1xf32>, %r: tensor<1x2x1x3xf32>, %s: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %c = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %0 = graph.add(%c, %r) : (tensor<1x2x3x3xf32>, tensor<1x2x1x3xf32>) -> tensor<1x2x3x3xf32>
  %d = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = graph.add(%d, %s) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %e = graph.conv(%x, %w) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, activation = "relu"} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %2 = graph.add(%e, %s) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %0, %1, %d, %2 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @conv_add_keep(
// CHECK-NOT:     graph.conv_add
// CHECK:         func.return
