// RUN: onnxc-opt %s -p cse --split-input-file | filecheck %s

// Equal constants merge, small ones (keyed by all their bytes) and large ones (8 KB, keyed
// by a sample of their bytes); so do the ops that then read the same operands.
func.func @equal_constants(%x: tensor<2048xf32>) -> (tensor<2048xf32>, tensor<2x2xf32>) {
  %a = graph.constant {value = dense<2.000000e+00> : tensor<2048xf32>} : tensor<2048xf32>
  %b = graph.constant {value = dense<2.000000e+00> : tensor<2048xf32>} : tensor<2048xf32>
  %s = graph.constant {value = dense<1.000000e+00> : tensor<4xf32>} : tensor<4xf32>
  %t = graph.constant {value = dense<1.000000e+00> : tensor<4xf32>} : tensor<4xf32>
  %0 = graph.add(%x, %a) : (tensor<2048xf32>, tensor<2048xf32>) -> tensor<2048xf32>
  %1 = graph.add(%x, %b) : (tensor<2048xf32>, tensor<2048xf32>) -> tensor<2048xf32>
  %2 = graph.mul(%0, %1) : (tensor<2048xf32>, tensor<2048xf32>) -> tensor<2048xf32>
  %3 = graph.reshape(%s) : (tensor<4xf32>) -> tensor<2x2xf32>
  %4 = graph.reshape(%t) : (tensor<4xf32>) -> tensor<2x2xf32>
  %5 = graph.add(%3, %4) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %2, %5 : tensor<2048xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func @equal_constants(
// CHECK-NEXT:    %a = graph.constant {value = dense<2.000000e+00> : tensor<2048xf32>}
// CHECK-NEXT:    %s = graph.constant {value = dense<1.000000e+00> : tensor<4xf32>}
// CHECK-NEXT:    %0 = graph.add(%x, %a)
// CHECK-NEXT:    %1 = graph.mul(%0, %0)
// CHECK-NEXT:    %2 = graph.reshape(%s)
// CHECK-NEXT:    %3 = graph.add(%2, %2)
// CHECK-NEXT:    func.return %1, %3

// -----

// Negative: different values, or the same bytes in another type, stay apart.
func.func @different_constants(%x: tensor<2048xf32>, %i: tensor<2048xi32>) -> (tensor<2048xf32>, tensor<2048xi32>) {
  %a = graph.constant {value = dense<2.000000e+00> : tensor<2048xf32>} : tensor<2048xf32>
  %b = graph.constant {value = dense<3.000000e+00> : tensor<2048xf32>} : tensor<2048xf32>
  %c = graph.constant {value = dense<1073741824> : tensor<2048xi32>} : tensor<2048xi32>
  %0 = graph.add(%x, %a) : (tensor<2048xf32>, tensor<2048xf32>) -> tensor<2048xf32>
  %1 = graph.add(%0, %b) : (tensor<2048xf32>, tensor<2048xf32>) -> tensor<2048xf32>
  %2 = graph.add(%i, %c) : (tensor<2048xi32>, tensor<2048xi32>) -> tensor<2048xi32>
  func.return %1, %2 : tensor<2048xf32>, tensor<2048xi32>
}
// CHECK-LABEL: func.func @different_constants(
// CHECK-NEXT:    %a = graph.constant {value = dense<2.000000e+00> : tensor<2048xf32>}
// CHECK-NEXT:    %b = graph.constant {value = dense<3.000000e+00> : tensor<2048xf32>}
// CHECK-NEXT:    %c = graph.constant {value = dense<1073741824> : tensor<2048xi32>}

// -----

// A constant in a branch merges with an equal one before the If; the two branches' own
// constants do not merge with each other (neither branch sees the other).
func.func @scopes(%c: tensor<1xi1>, %x: tensor<2048xf32>) -> (tensor<2048xf32>, tensor<2048xf32>) {
  %a = graph.constant {value = dense<2.000000e+00> : tensor<2048xf32>} : tensor<2048xf32>
  %0 = graph.add(%x, %a) : (tensor<2048xf32>, tensor<2048xf32>) -> tensor<2048xf32>
  %y = "graph.if"(%c) ({
    %t = graph.constant {value = dense<2.000000e+00> : tensor<2048xf32>} : tensor<2048xf32>
    %u = graph.constant {value = dense<5.000000e+00> : tensor<2048xf32>} : tensor<2048xf32>
    %1 = graph.mul(%x, %t) : (tensor<2048xf32>, tensor<2048xf32>) -> tensor<2048xf32>
    %2 = graph.mul(%1, %u) : (tensor<2048xf32>, tensor<2048xf32>) -> tensor<2048xf32>
    graph.yield %2 : tensor<2048xf32>
  }, {
    %v = graph.constant {value = dense<5.000000e+00> : tensor<2048xf32>} : tensor<2048xf32>
    %3 = graph.sub(%x, %v) : (tensor<2048xf32>, tensor<2048xf32>) -> tensor<2048xf32>
    graph.yield %3 : tensor<2048xf32>
  }) : (tensor<1xi1>) -> tensor<2048xf32>
  func.return %0, %y : tensor<2048xf32>, tensor<2048xf32>
}
// CHECK-LABEL: func.func @scopes(
// CHECK-NEXT:    %a = graph.constant {value = dense<2.000000e+00> : tensor<2048xf32>}
// CHECK-NEXT:    %0 = graph.add(%x, %a)
// CHECK-NEXT:    %y = graph.if(%c) {
// CHECK-NEXT:      %u = graph.constant {value = dense<5.000000e+00> : tensor<2048xf32>}
// CHECK-NEXT:      %1 = graph.mul(%x, %a)
// CHECK-NEXT:      %2 = graph.mul(%1, %u)
// CHECK-NEXT:      graph.yield %2
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %v = graph.constant {value = dense<5.000000e+00> : tensor<2048xf32>}
// CHECK-NEXT:      %3 = graph.sub(%x, %v)

// -----

// Negative: equal constants of two functions stay in each (a function is isolated).
func.func @first(%x: tensor<2048xf32>) -> tensor<2048xf32> {
  %a = graph.constant {value = dense<2.000000e+00> : tensor<2048xf32>} : tensor<2048xf32>
  %0 = graph.add(%x, %a) : (tensor<2048xf32>, tensor<2048xf32>) -> tensor<2048xf32>
  func.return %0 : tensor<2048xf32>
}
func.func @second(%x: tensor<2048xf32>) -> tensor<2048xf32> {
  %b = graph.constant {value = dense<2.000000e+00> : tensor<2048xf32>} : tensor<2048xf32>
  %0 = graph.add(%x, %b) : (tensor<2048xf32>, tensor<2048xf32>) -> tensor<2048xf32>
  func.return %0 : tensor<2048xf32>
}
// CHECK-LABEL: func.func @first(
// CHECK-NEXT:    %a = graph.constant
// CHECK-NEXT:    %0 = graph.add(%x, %a)
// CHECK-LABEL: func.func @second(
// CHECK-NEXT:    %b = graph.constant
// CHECK-NEXT:    %0 = graph.add(%x, %b)
