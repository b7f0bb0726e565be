// RUN: onnxc-opt %s -p distribute --split-input-file | filecheck %s

// a*x + y*a -> a*(x+y), a*x - a*y -> a*(x-y).
func.func @factor(%a: tensor<f32>, %x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = graph.mul(%a, %x) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.mul(%y, %a) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = graph.add(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.mul(%a, %x) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = graph.mul(%a, %y) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %5 = graph.sub(%3, %4) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2, %5 : tensor<4xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @factor(
// CHECK-NEXT:    %[[S:.*]] = graph.add(%x, %y)
// CHECK-NEXT:    %[[P:.*]] = graph.mul(%a, %[[S]])
// CHECK-NEXT:    %[[D:.*]] = graph.sub(%x, %y)
// CHECK-NEXT:    %[[Q:.*]] = graph.mul(%a, %[[D]])
// CHECK-NEXT:    func.return %[[P]], %[[Q]]

// -----

// No common factor; a product used elsewhere; x broadcast by the product (x + y would be
// computed on the small shape, the multiply still on the large one: no multiply saved).
func.func @keep(%a: tensor<4xf32>, %b: tensor<4xf32>, %x: tensor<4xf32>, %y: tensor<4xf32>, %m: tensor<3x4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>) {
  %0 = graph.mul(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.mul(%b, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.add(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.mul(%a, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = graph.add(%0, %3) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %5 = graph.mul(%m, %x) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %6 = graph.mul(%m, %y) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %7 = graph.add(%5, %6) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %2, %4, %0, %7 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>
}
// CHECK-LABEL: func.func @keep(
// CHECK-NEXT:    %0 = graph.mul(%a, %x)
// CHECK-NEXT:    %1 = graph.mul(%b, %y)
// CHECK-NEXT:    %2 = graph.add(%0, %1)
// CHECK-NEXT:    %3 = graph.mul(%a, %y)
// CHECK-NEXT:    %4 = graph.add(%0, %3)
// CHECK-NEXT:    %5 = graph.mul(%m, %x)
// CHECK-NEXT:    %6 = graph.mul(%m, %y)
// CHECK-NEXT:    %7 = graph.add(%5, %6)
