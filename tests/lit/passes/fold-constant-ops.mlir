// RUN: onnxc-opt %s -p fold-constant-ops --split-input-file | filecheck %s

// Arithmetic on constants is evaluated at compile time.
func.func @add_constants(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %b = graph.constant {value = dense<[10.0, 20.0]> : tensor<2xf32>} : tensor<2xf32>
  %s = graph.add(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r = graph.mul(%x, %s) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
// CHECK-LABEL: func.func @add_constants(
// CHECK-NEXT:    %{{.*}} = graph.constant {value = dense<[1.100000e+01, 2.200000e+01]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT:    %{{.*}} = graph.mul(%x, %{{.*}})
// CHECK-NEXT:    func.return

// -----

// A splat ConstantOfShape becomes a dense constant, and chains fold to the end.
func.func @splat_chain() -> tensor<2x2xi64> {
  %z = graph.constant_of_shape {value = dense<3> : tensor<1xi64>} : tensor<2x2xi64>
  %t = graph.transpose(%z) {perm = array<i64: 1, 0>} : (tensor<2x2xi64>) -> tensor<2x2xi64>
  %n = graph.neg(%t) : (tensor<2x2xi64>) -> tensor<2x2xi64>
  func.return %n : tensor<2x2xi64>
}
// CHECK-LABEL: func.func @splat_chain(
// CHECK-NEXT:    %{{.*}} = graph.constant {value = dense<-3> : tensor<2x2xi64>} : tensor<2x2xi64>
// CHECK-NEXT:    func.return

// -----

// Split of a constant folds into one constant per result.
func.func @split_constant() -> (tensor<1xf32>, tensor<2xf32>) {
  %c = graph.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : tensor<3xf32>
  %a, %b = graph.split(%c) {axis = 0 : i64} : (tensor<3xf32>) -> (tensor<1xf32>, tensor<2xf32>)
  func.return %a, %b : tensor<1xf32>, tensor<2xf32>
}
// CHECK-LABEL: func.func @split_constant(
// CHECK-NEXT:    %{{.*}} = graph.constant {value = dense<1.000000e+00> : tensor<1xf32>} : tensor<1xf32>
// CHECK-NEXT:    %{{.*}} = graph.constant {value = dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT:    func.return

// -----

// Negative: an op with a non-constant operand stays.
func.func @runtime_operand(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : tensor<2xf32>
  %s = graph.add(%x, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %s : tensor<2xf32>
}
// CHECK-LABEL: func.func @runtime_operand(
// CHECK-NEXT:    %a = graph.constant {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>} : tensor<2xf32>
// CHECK-NEXT:    %s = graph.add(%x, %a)
// CHECK-NEXT:    func.return %s

// -----

// Shape data bound as run sizes that folding finds constant: the symbols become numbers in
// every type of the function, and the bind disappears.
func.func @bound_sizes_of_a_constant(%x: tensor<2x3xf32>) -> tensor<?x?xf32, #graph.dims<["h", "w"]>> {
  %s = graph.constant {value = dense<[4, 5]> : tensor<2xi64>} : tensor<2xi64>
  graph.bind_sizes(%s) {defines = ["h", "w"]} : tensor<2xi64>
  %y = graph.pad(%x) {pads = #graph.sizes<["0", "0", "h-2", "w-3"]>, mode = "constant", value = 0.000000e+00 : f32} : (tensor<2x3xf32>) -> tensor<?x?xf32, #graph.dims<["h", "w"]>>
  func.return %y : tensor<?x?xf32, #graph.dims<["h", "w"]>>
}
// CHECK-LABEL: func.func @bound_sizes_of_a_constant(
// CHECK-NOT:     graph.bind_sizes
// CHECK:         graph.pad(%x) {pads = array<i64: 0, 0, 2, 2>
// CHECK-SAME:    -> tensor<4x5xf32>
// CHECK:         func.return %{{.*}} : tensor<4x5xf32>

// -----

// A property that takes sizes gets its static form back: TopK's k an integer.
func.func @bound_k_of_a_constant(%x: tensor<2x5xf32>) -> tensor<2x?xf32, #graph.dims<["k"]>> {
  %s = graph.constant {value = dense<[3]> : tensor<1xi64>} : tensor<1xi64>
  graph.bind_sizes(%s) {defines = ["k"]} : tensor<1xi64>
  %v, %i = graph.top_k(%x) {axis = 1 : i64, k = #graph.sizes<["k"]>, largest = 1 : i64} : (tensor<2x5xf32>) -> (tensor<2x?xf32, #graph.dims<["k"]>>, tensor<2x?xi64, #graph.dims<["k"]>>)
  func.return %v : tensor<2x?xf32, #graph.dims<["k"]>>
}
// CHECK-LABEL: func.func @bound_k_of_a_constant(
// CHECK-NOT:     graph.bind_sizes
// CHECK:         graph.top_k(%x) {axis = 1 : i64, k = 3 : i64, largest = 1 : i64} : (tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
