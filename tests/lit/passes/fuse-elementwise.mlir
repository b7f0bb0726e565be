// RUN: onnxc-opt %s -p fuse-elementwise --split-input-file | filecheck %s

// A tree of elementwise ops (a bias add, a residual add, relu6) becomes one op.
func.func @tree(%x: tensor<1x2x3x3xf32>, %r: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %b = graph.constant {value = dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>} : tensor<2x1x1xf32>
  %0 = graph.add(%x, %b) : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = graph.sigmoid(%r) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %2 = graph.mul(%0, %1) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %3 = graph.clip(%2) {min = 0.0 : f32, max = 6.0 : f32} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %3 : tensor<1x2x3x3xf32>
}
// CHECK-LABEL: func.func @tree(
// CHECK:         %{{.*}} = graph.fused_elementwise(%x, %b, %r) : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[B:.*]]: f32, %[[R:.*]]: f32):
// CHECK-NEXT:      %[[ADD:.*]] = arith.addf %[[X]], %[[B]] : f32
// sigmoid(r) = 1 / (1 + exp(-r))
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[NEG:.*]] = arith.negf %[[R]] : f32
// CHECK-NEXT:      %[[EXP:.*]] = math.exp %[[NEG]] : f32
// CHECK-NEXT:      %[[DEN:.*]] = arith.addf %[[ONE]], %[[EXP]] : f32
// CHECK-NEXT:      %[[SIG:.*]] = arith.divf %[[ONE]], %[[DEN]] : f32
// CHECK-NEXT:      %[[MUL:.*]] = arith.mulf %[[ADD]], %[[SIG]] : f32
// clip(., 0, 6)
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[LO:.*]] = arith.maximumf %[[MUL]], %[[ZERO]] : f32
// CHECK-NEXT:      %[[SIX:.*]] = arith.constant 6.000000e+00 : f32
// CHECK-NEXT:      %[[HI:.*]] = arith.minimumf %[[LO]], %[[SIX]] : f32
// CHECK-NEXT:      graph.yield %[[HI]] : f32
// CHECK-NEXT:    }
// CHECK-NOT:     graph.add
// CHECK-NEXT:    func.return

// -----

// An intermediate with a second user, a producer the consumer would broadcast, and
// integer tensors all stay separate ops.
func.func @no_fusion(%x: tensor<4xf32>, %y: tensor<3x4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>, tensor<4xi32>) {
  %0 = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.exp(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.neg(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.add(%2, %y) : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %4 = graph.neg(%i) : (tensor<4xi32>) -> tensor<4xi32>
  %5 = graph.abs(%4) : (tensor<4xi32>) -> tensor<4xi32>
  func.return %0, %1, %3, %5 : tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>, tensor<4xi32>
}
// CHECK-LABEL: func.func @no_fusion(
// CHECK-NOT:     graph.fused_elementwise
// CHECK:         func.return

// -----

// A chain becomes one op in one rewrite at its root; an input read by every step is one
// operand.
func.func @chain(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = graph.add(%x, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = graph.add(%0, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = graph.relu(%1) : (tensor<8xf32>) -> tensor<8xf32>
  %3 = graph.add(%2, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %3 : tensor<8xf32>
}
// CHECK-LABEL: func.func @chain(
// CHECK-NEXT:    %{{.*}} = graph.fused_elementwise(%x) : (tensor<8xf32>) -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32):
// CHECK-NEXT:      %[[A0:.*]] = arith.addf %[[X]], %[[X]] : f32
// CHECK-NEXT:      %[[A1:.*]] = arith.addf %[[A0]], %[[X]] : f32
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[RELU:.*]] = arith.maximumf %[[A1]], %[[ZERO]] : f32
// CHECK-NEXT:      %[[A3:.*]] = arith.addf %[[RELU]], %[[X]] : f32
// CHECK-NEXT:      graph.yield %[[A3]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return

// -----

// A fused op takes in fusable producers and the fused ops it reads; a value with a second
// user ends a tree (%1 is also returned), so two fused ops remain.
func.func @fused_operands(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = graph.fused_elementwise(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32):
    %n = arith.negf %a : f32
    %e = math.exp %n : f32
    graph.yield %e : f32
  }
  %1 = graph.mul(%0, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.tanh(%y) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.fused_elementwise(%1, %2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32, %b: f32):
    %d = arith.subf %a, %b : f32
    graph.yield %d : f32
  }
  %4 = graph.abs(%3) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1, %4 : tensor<4xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @fused_operands(
// CHECK-NEXT:    %[[M:.*]] = graph.fused_elementwise(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32):
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[X]] : f32
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[N]] : f32
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[E]], %[[Y]] : f32
// CHECK-NEXT:      graph.yield %[[P]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R:.*]] = graph.fused_elementwise(%y, %[[M]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%[[Y2:.*]]: f32, %[[M2:.*]]: f32):
// CHECK-NEXT:      %[[T:.*]] = math.tanh %[[Y2]] : f32
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[M2]], %[[T]] : f32
// CHECK-NEXT:      %[[A:.*]] = math.absf %[[D]] : f32
// CHECK-NEXT:      graph.yield %[[A]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[M]], %[[R]]
