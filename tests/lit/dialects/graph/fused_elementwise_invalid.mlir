// RUN: onnxc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: onnxc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ALL-FAIL

// One case per verifier rule of graph.fused_elementwise's scalar body
// (graph_fused_elementwise.py); no chunk may verify.
// ALL-FAIL-NOT: builtin.module {

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused_elementwise(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: f16):
  graph.yield %a : f16
}
// CHECK: Operation does not verify: graph.fused_elementwise: the body takes (f16), expected the operands' element types (f32)

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused_elementwise(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: f32, %b: f32):
  graph.yield %a : f32
}
// CHECK: Operation does not verify: graph.fused_elementwise: the body takes (f32, f32), expected the operands' element types (f32)

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused_elementwise(%x) : (tensor<4xf32>) -> tensor<4xf16> {
^bb0(%a: f32):
  graph.yield %a : f32
}
// CHECK: Operation does not verify: graph.fused_elementwise: the body yields (f32), expected one f16 (the result's element type)

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused_elementwise(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: f32):
  %s = arith.addf %a, %a : f32
  graph.yield %s, %a : f32, f32
}
// CHECK: Operation does not verify: graph.fused_elementwise: the body yields (f32, f32), expected one f32 (the result's element type)

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused_elementwise(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: f32):
  %s = arith.addf %a, %a : f32
}
// CHECK: Operation arith.addf terminates block in single-block region but is not a terminator

// -----

%x = "test.op"() : () -> tensor<4xi32>
%y = graph.fused_elementwise(%x) : (tensor<4xi32>) -> tensor<4xi32> {
^bb0(%a: i32):
  %s = arith.addi %a, %a : i32
  graph.yield %s : i32
}
// CHECK: Operation does not verify: graph.fused_elementwise: 'arith.addi' is not allowed in the body (pure scalar arith/math ops only)

// -----

// A math op no consumer of bodies (kernel, evaluator, exporter) handles.
%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused_elementwise(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: f32):
  %s = math.sin %a : f32
  graph.yield %s : f32
}
// CHECK: Operation does not verify: graph.fused_elementwise: 'math.sin' is not allowed in the body (pure scalar arith/math ops only)

// -----

// No control flow.
%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused_elementwise(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: f32):
  %s = scf.execute_region -> f32 {
    scf.yield %a : f32
  }
  graph.yield %s : f32
}
// CHECK: Operation does not verify: graph.fused_elementwise: 'scf.execute_region' is not allowed in the body (pure scalar arith/math ops only)

// -----

%x = "test.op"() : () -> tensor<4xf32>
%y = graph.fused_elementwise(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: f32):
  %v = arith.constant dense<1.0> : vector<4xf32>
  graph.yield %a : f32
}
// CHECK: Operation does not verify: graph.fused_elementwise: 'arith.constant' in the body has a vector<4xf32> value (only scalars)

// -----

// The body sees one element of each operand and nothing else.
%x = "test.op"() : () -> tensor<4xf32>
%o = "test.op"() : () -> f32
%y = graph.fused_elementwise(%x) : (tensor<4xf32>) -> tensor<4xf32> {
^bb0(%a: f32):
  %s = arith.addf %a, %o : f32
  graph.yield %s : f32
}
// CHECK: Operation does not verify: Operation using value defined out of its IsolatedFromAbove parent: AddfOp(%s = arith.addf %a, %o : f32)

// -----

%y = graph.fused_elementwise() : () -> tensor<4xf32> {
^bb0:
  %c = arith.constant 1.0 : f32
  graph.yield %c : f32
}
// CHECK: Operation does not verify: graph.fused_elementwise: needs at least one input
