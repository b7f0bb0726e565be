// RUN: onnxc-opt %s -p broadcast-simplify --split-input-file | filecheck %s

// Expand (imported as x * ones(shape)) feeding only broadcasting ops that get the
// expanded shape from their other operand anyway: the users read x directly.
func.func @drop_expand(%x: tensor<1x4xf32>, %y: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %ones = graph.constant_of_shape {value = dense<1.0> : tensor<1xf32>} : tensor<3x4xf32>
  %e = graph.mul(%x, %ones) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %0 = graph.add(%e, %y) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = graph.max(%y, %e, %y) : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %0, %1 : tensor<3x4xf32>, tensor<3x4xf32>
}
// CHECK-LABEL: func.func @drop_expand(
// CHECK-NEXT:    %0 = graph.add(%x, %y) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %1 = graph.max(%y, %x, %y) : (tensor<3x4xf32>, tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %0, %1

// -----

// The expanded tensor is returned or feeds an op that is not elementwise: the Expand stays.
func.func @keep_expand(%x: tensor<1x4xf32>) -> (tensor<3x4xf32>, tensor<4x3xf32>) {
  %ones = graph.constant_of_shape {value = dense<1.0> : tensor<1xf32>} : tensor<3x4xf32>
  %e = graph.mul(%x, %ones) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %t = graph.transpose(%e) {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  func.return %e, %t : tensor<3x4xf32>, tensor<4x3xf32>
}
// CHECK-LABEL: func.func @keep_expand(
// CHECK:         %e = graph.mul(%x, %ones)
// CHECK-NEXT:    %t = graph.transpose(%e)

// -----

// An elementwise op whose result is large only through the Expand (a unary op, a binary op
// whose other operand is smaller) computes on x; its result is expanded instead.
func.func @sink_expand_small(%x: tensor<1x4xf32>, %s: tensor<1x1xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  %ones = graph.constant_of_shape {value = dense<1.0> : tensor<1xf32>} : tensor<3x4xf32>
  %f = graph.mul(%x, %ones) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %0 = graph.relu(%f) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %1 = graph.add(%f, %s) : (tensor<3x4xf32>, tensor<1x1xf32>) -> tensor<3x4xf32>
  func.return %0, %1 : tensor<3x4xf32>, tensor<3x4xf32>
}
// CHECK-LABEL: func.func @sink_expand_small(
// CHECK:         %[[R:.*]] = graph.relu(%x) : (tensor<1x4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %[[O:.*]] = graph.constant_of_shape {value = dense<1.000000e+00> : tensor<1xf32>} : tensor<3x4xf32>
// CHECK-NEXT:    %[[E:.*]] = graph.mul(%[[R]], %[[O]]) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[A:.*]] = graph.add(%x, %s) : (tensor<1x4xf32>, tensor<1x1xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %[[O2:.*]] = graph.constant_of_shape {value = dense<1.000000e+00> : tensor<1xf32>} : tensor<3x4xf32>
// CHECK-NEXT:    %[[E2:.*]] = graph.mul(%[[A]], %[[O2]]) : (tensor<1x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %[[E]], %[[E2]]

// -----

// torch's attention mask: [b, 1, 1, s] expanded to [b, 1, s, s] before its Cast, Sub, Cast
// and Where. The Expand sinks below each elementwise op (of any size, symbolic too), then
// the Add that broadcasts anyway drops it: the mask stays a row per batch.
func.func @sink_expand(%m: tensor<?x1x1x?xi64, #graph.dims<["b", "s"]>>, %scores: tensor<?x4x?x?xf32, #graph.dims<["b", "s", "s"]>>) -> tensor<?x4x?x?xf32, #graph.dims<["b", "s", "s"]>> {
  %ones = graph.constant_of_shape {value = dense<1> : tensor<1xi64>} : tensor<?x1x?x?xi64, #graph.dims<["b", "s", "s"]>>
  %e = graph.mul(%m, %ones) : (tensor<?x1x1x?xi64, #graph.dims<["b", "s"]>>, tensor<?x1x?x?xi64, #graph.dims<["b", "s", "s"]>>) -> tensor<?x1x?x?xi64, #graph.dims<["b", "s", "s"]>>
  %f = graph.cast(%e) : (tensor<?x1x?x?xi64, #graph.dims<["b", "s", "s"]>>) -> tensor<?x1x?x?xf32, #graph.dims<["b", "s", "s"]>>
  %c = graph.constant {value = dense<1.0> : tensor<f32>} : tensor<f32>
  %s = graph.sub(%c, %f) : (tensor<f32>, tensor<?x1x?x?xf32, #graph.dims<["b", "s", "s"]>>) -> tensor<?x1x?x?xf32, #graph.dims<["b", "s", "s"]>>
  %b = graph.cast(%s) : (tensor<?x1x?x?xf32, #graph.dims<["b", "s", "s"]>>) -> tensor<?x1x?x?xi1, #graph.dims<["b", "s", "s"]>>
  %low = graph.constant {value = dense<-3.0e38> : tensor<f32>} : tensor<f32>
  %w = graph.where(%b, %low, %s) : (tensor<?x1x?x?xi1, #graph.dims<["b", "s", "s"]>>, tensor<f32>, tensor<?x1x?x?xf32, #graph.dims<["b", "s", "s"]>>) -> tensor<?x1x?x?xf32, #graph.dims<["b", "s", "s"]>>
  %a = graph.add(%scores, %w) : (tensor<?x4x?x?xf32, #graph.dims<["b", "s", "s"]>>, tensor<?x1x?x?xf32, #graph.dims<["b", "s", "s"]>>) -> tensor<?x4x?x?xf32, #graph.dims<["b", "s", "s"]>>
  func.return %a : tensor<?x4x?x?xf32, #graph.dims<["b", "s", "s"]>>
}
// CHECK-LABEL: func.func @sink_expand(
// CHECK:         %[[F:.*]] = graph.cast(%m) : (tensor<?x1x1x?xi64, {{.*}}>) -> tensor<?x1x1x?xf32, #graph.dims<["b", "s"]>>
// CHECK:         %[[S:.*]] = graph.sub(%c, %[[F]]) : (tensor<f32>, tensor<?x1x1x?xf32, {{.*}}>) -> tensor<?x1x1x?xf32, #graph.dims<["b", "s"]>>
// CHECK-NEXT:    %[[B:.*]] = graph.cast(%[[S]]) : {{.*}} -> tensor<?x1x1x?xi1, #graph.dims<["b", "s"]>>
// CHECK:         %[[W:.*]] = graph.where(%[[B]], %low, %[[S]]) : {{.*}} -> tensor<?x1x1x?xf32, #graph.dims<["b", "s"]>>
// CHECK-NEXT:    %a = graph.add(%scores, %[[W]]) : (tensor<?x4x?x?xf32, {{.*}}>, tensor<?x1x1x?xf32, {{.*}}>) -> tensor<?x4x?x?xf32, {{.*}}>
// CHECK-NEXT:    func.return %a

// -----

// A bool Expand (x AND true) sinks through Not; the Expand stays where its result is returned.
func.func @sink_bool_expand(%x: tensor<1x4xi1>) -> tensor<3x4xi1> {
  %true = graph.constant_of_shape {value = dense<true> : tensor<1xi1>} : tensor<3x4xi1>
  %e = graph.and(%x, %true) : (tensor<1x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
  %n = graph.not(%e) : (tensor<3x4xi1>) -> tensor<3x4xi1>
  func.return %n : tensor<3x4xi1>
}
// CHECK-LABEL: func.func @sink_bool_expand(
// CHECK:         %[[N:.*]] = graph.not(%x) : (tensor<1x4xi1>) -> tensor<1x4xi1>
// CHECK-NEXT:    %[[T:.*]] = graph.constant_of_shape {value = dense<true> : tensor<1xi1>} : tensor<3x4xi1>
// CHECK-NEXT:    %{{.*}} = graph.and(%[[N]], %[[T]]) : (tensor<1x4xi1>, tensor<3x4xi1>) -> tensor<3x4xi1>
