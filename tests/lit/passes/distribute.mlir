// RUN: onnxc-opt %s -p distribute --split-input-file | filecheck %s

// a*x + y*a -> a*(x+y), a*x - a*y -> a*(x-y), for a positive finite float constant a and
// for any integer a (integer arithmetic wraps, so it distributes exactly).
func.func @factor(%x: tensor<4xf32>, %y: tensor<4xf32>, %n: tensor<i32>, %i: tensor<4xi32>, %j: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %a = graph.constant {value = dense<[0.5, 2.0, 3.0, 1024.0]> : tensor<4xf32>} : tensor<4xf32>
  %0 = graph.mul(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.mul(%y, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.add(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.mul(%a, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = graph.mul(%a, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %5 = graph.sub(%3, %4) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %6 = graph.mul(%n, %i) : (tensor<i32>, tensor<4xi32>) -> tensor<4xi32>
  %7 = graph.mul(%j, %n) : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %8 = graph.sub(%6, %7) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %2, %5, %8 : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}
// CHECK-LABEL: func.func @factor(
// CHECK-NEXT:    %a = graph.constant
// CHECK-NEXT:    %[[S:.*]] = graph.add(%x, %y)
// CHECK-NEXT:    %[[P:.*]] = graph.mul(%a, %[[S]])
// CHECK-NEXT:    %[[D:.*]] = graph.sub(%x, %y)
// CHECK-NEXT:    %[[Q:.*]] = graph.mul(%a, %[[D]])
// CHECK-NEXT:    %[[E:.*]] = graph.sub(%i, %j)
// CHECK-NEXT:    %[[R:.*]] = graph.mul(%n, %[[E]])
// CHECK-NEXT:    func.return %[[P]], %[[Q]], %[[R]]

// -----

// Not exact for a float factor that may be negative or zero: with a = -1, x = +0, y = -0,
// a*x + a*y = -0 + +0 = +0 but a*(x + y) = -1 * +0 = -0 (with a = 0 and x = -2, y = 1 the
// same; with a = inf, x = 0, y = 1: NaN against inf). So a run-time a, a negative constant
// and a constant holding 0 or inf ("0x0000807F": the bytes of +inf) all stay.
func.func @signed_zero_factors(%r: tensor<f32>, %x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %neg = graph.constant {value = dense<-2.0> : tensor<f32>} : tensor<f32>
  %zero = graph.constant {value = dense<[1.0, 0.0, 1.0, 1.0]> : tensor<4xf32>} : tensor<4xf32>
  %inf = graph.constant {value = dense<"0x0000807F"> : tensor<f32>} : tensor<f32>
  %0 = graph.mul(%r, %x) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.mul(%r, %y) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.add(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.mul(%neg, %x) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = graph.mul(%neg, %y) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %5 = graph.add(%3, %4) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %6 = graph.mul(%zero, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %7 = graph.mul(%zero, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %8 = graph.sub(%6, %7) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %9 = graph.mul(%inf, %x) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %10 = graph.mul(%inf, %y) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %11 = graph.add(%9, %10) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2, %5, %8, %11 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @signed_zero_factors(
// CHECK:         %2 = graph.add(%0, %1)
// CHECK:         %5 = graph.add(%3, %4)
// CHECK:         %8 = graph.sub(%6, %7)
// CHECK:         %11 = graph.add(%9, %10)

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
