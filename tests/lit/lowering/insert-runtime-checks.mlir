// RUN: onnxc-opt %s --split-input-file -p insert-runtime-checks | filecheck %s

// A Gather's run-time indices are checked against the gathered axis, negative ones allowed
// (ONNX wraps them); the check names the ONNX node the importer recorded.

func.func @gather(%x: tensor<4x3xf32>, %i: tensor<2xi64>) -> tensor<4x2xf32> {
  %y = graph.gather(%x, %i) {onnx.node = "rows", axis = 1 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  func.return %y : tensor<4x2xf32>
}

// CHECK-LABEL: func.func @gather(
// CHECK-NEXT:    graph.check_indices(%i) {bounds = array<i64: 3>, negative = 1 : i64, node = "rows", op_type = "Gather", operand = "indices"} : tensor<2xi64>
// CHECK-NEXT:    %y = graph.gather(%x, %i)

// -----

// GatherND's index tuples are checked column by column against the addressed axes (after
// batch_dims); without a recorded node name the result's name stands in.

func.func @gather_nd(%x: tensor<2x4x3xf32>, %i: tensor<2x5x2xi64>) -> tensor<2x5xf32> {
  %y = graph.gather_nd(%x, %i) {batch_dims = 1 : i64} : (tensor<2x4x3xf32>, tensor<2x5x2xi64>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @gather_nd(
// CHECK-NEXT:    graph.check_indices(%i) {bounds = array<i64: 4, 3>, negative = 1 : i64, node = "y", op_type = "GatherND", operand = "indices"}

// -----

// Indices ONNX does not wrap: RoiAlign's batch indices, MaxUnpool's flat positions (into the
// whole unpooled tensor), ReverseSequence's lengths (0 up to the time axis' length) and
// TensorScatter's write positions (the whole update must fit; circular: any position >= 0).

func.func @non_negative(%x: tensor<2x1x4x4xf32>, %r: tensor<3x4xf32>, %b: tensor<3xi64>,
                        %s: tensor<5x2xf32>, %l: tensor<2xi64>,
                        %p: tensor<2x6x4xf32>, %u: tensor<2x2x4xf32>, %w: tensor<2xi64>)
    -> (tensor<3x1x1x1xf32>, tensor<5x2xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>) {
  %a = graph.roi_align(%x, %r, %b) {mode = "avg", sampling_ratio = 0 : i64, spatial_scale = 1.0 : f32, half_pixel = 1 : i64} : (tensor<2x1x4x4xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x1x1x1xf32>
  %v = graph.reverse_sequence(%s, %l) {batch_axis = 1 : i64, time_axis = 0 : i64} : (tensor<5x2xf32>, tensor<2xi64>) -> tensor<5x2xf32>
  %t = graph.tensor_scatter(%p, %u, %w) {axis = 1 : i64, circular = 0 : i64} : (tensor<2x6x4xf32>, tensor<2x2x4xf32>, tensor<2xi64>) -> tensor<2x6x4xf32>
  %c = graph.tensor_scatter(%p, %u, %w) {axis = 1 : i64, circular = 1 : i64} : (tensor<2x6x4xf32>, tensor<2x2x4xf32>, tensor<2xi64>) -> tensor<2x6x4xf32>
  func.return %a, %v, %t, %c : tensor<3x1x1x1xf32>, tensor<5x2xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>
}

// CHECK-LABEL: func.func @non_negative(
// CHECK-NEXT:    graph.check_indices(%b) {bounds = array<i64: 2>, negative = 0 : i64, node = "a", op_type = "RoiAlign", operand = "batch_indices"}
// CHECK-NEXT:    %a = graph.roi_align
// CHECK-NEXT:    graph.check_indices(%l) {bounds = array<i64: 6>, negative = 0 : i64, node = "v", op_type = "ReverseSequence", operand = "sequence_lens"}
// CHECK-NEXT:    %v = graph.reverse_sequence
// CHECK-NEXT:    graph.check_indices(%w) {bounds = array<i64: 5>, negative = 0 : i64, node = "t", op_type = "TensorScatter", operand = "write_indices"}
// CHECK-NEXT:    %t = graph.tensor_scatter
// CHECK-NEXT:    graph.check_indices(%w) {bounds = array<i64: 9223372036854775807>, negative = 0 : i64, node = "c", op_type = "TensorScatter", operand = "write_indices"}
// CHECK-NEXT:    %c = graph.tensor_scatter

// -----

// Integer Div and Mod check their divisor; float division is IEEE and needs no check.

func.func @divide(%a: tensor<4xi32>, %b: tensor<4xi32>, %f: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xf32>) {
  %q = graph.div(%a, %b) {onnx.node = "quotient"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %r = graph.mod(%a, %b) {fmod = 0 : i64, onnx.node = "remainder"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %g = graph.div(%f, %f) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %q, %r, %g : tensor<4xi32>, tensor<4xi32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @divide(
// CHECK-NEXT:    graph.check_divisor(%b) {node = "quotient", op_type = "Div", operand = "B"} : tensor<4xi32>
// CHECK-NEXT:    %q = graph.div
// CHECK-NEXT:    graph.check_divisor(%b) {node = "remainder", op_type = "Mod", operand = "B"} : tensor<4xi32>
// CHECK-NEXT:    %r = graph.mod
// CHECK-NEXT:    %g = graph.div
// CHECK-NEXT:    func.return

// -----

// Constant indices and divisors are checked now, at compile time: valid ones need no
// run-time check (invalid ones are compile-time errors: insert-runtime-checks-errors.mlir).

func.func @constant(%x: tensor<4xf32>, %a: tensor<2xi32>) -> (tensor<2xf32>, tensor<2xi32>) {
  %i = graph.constant {value = dense<[-4, 3]> : tensor<2xi64>} : tensor<2xi64>
  %y = graph.gather(%x, %i) {axis = 0 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  %b = graph.constant {value = dense<[2, -1]> : tensor<2xi32>} : tensor<2xi32>
  %q = graph.div(%a, %b) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %y, %q : tensor<2xf32>, tensor<2xi32>
}

// CHECK-LABEL: func.func @constant(
// CHECK-NOT:     graph.check
// CHECK:         func.return

// -----

// A Slice with run-time bounds (a `nonnegative` gather) needs its starts in [0, dim): a start
// ONNX would count from the end or clamp is an error, not another slice.
func.func @run_time_slice(%x: tensor<5x4xf32>, %t: tensor<1xi64>) -> tensor<1x4xf32> {
  %y = graph.gather(%x, %t) {onnx.node = "rows", axis = 0 : i64, nonnegative} : (tensor<5x4xf32>, tensor<1xi64>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}
// CHECK-LABEL: func.func @run_time_slice(
// CHECK-NEXT:    graph.check_indices(%t) {bounds = array<i64: 5>, negative = 0 : i64, node = "rows", op_type = "Slice", operand = "starts"} : tensor<1xi64>
// CHECK-NEXT:    %y = graph.gather(%x, %t)
