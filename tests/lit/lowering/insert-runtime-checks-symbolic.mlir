// RUN: onnxc-opt %s --split-input-file -p insert-runtime-checks | filecheck %s
// RUN: onnxc-opt %s --split-input-file -p insert-runtime-checks,convert-graph-to-loops | filecheck %s --check-prefix=LOOPS

// Run-time indices into an axis of symbolic size (a torch loop's `x[t:t+1]` of a `seq` axis)
// are checked against that axis' size in the run: the check's bound is -1 (as `?` in a
// tensor type) with its polynomial in `symbolic_bounds`. Its kernel takes the symbols as
// trailing index arguments, like every kernel of symbolic types, and compares against them;
// the site keeps the range as polynomials, which the runtime evaluates for the error message.

func.func @gather(%x: tensor<?x8xf32, #graph.dims<["seq"]>>, %i: tensor<1xi64>) -> tensor<1x8xf32> {
  %y = graph.gather(%x, %i) {onnx.node = "step", axis = 0 : i64} : (tensor<?x8xf32, #graph.dims<["seq"]>>, tensor<1xi64>) -> tensor<1x8xf32>
  func.return %y : tensor<1x8xf32>
}

// CHECK-LABEL: func.func @gather(
// CHECK-NEXT:    graph.check_indices(%i) {bounds = array<i64: -1>, symbolic_bounds = #graph.dims<["seq"]>, negative = 1 : i64, node = "step", op_type = "Gather", operand = "indices"} : tensor<1xi64>
// CHECK-NEXT:    %y = graph.gather(%x, %i)

// LOOPS-LABEL: func.func private @check_indices_0(
// LOOPS-SAME:      %0: memref<1xi64>, %1: memref<3xi64>, %[[SEQ:[0-9]+]]: index)
// LOOPS:         %[[N:.*]] = arith.index_cast %[[SEQ]] : index to i64
// LOOPS-NEXT:    %[[TWO_N:.*]] = arith.addi %[[N]], %[[N]] : i64
// LOOPS:         %[[SHIFTED:.*]] = arith.addi %{{.*}}, %[[N]] : i64
// LOOPS-NEXT:    %{{.*}} = arith.cmpi uge, %[[SHIFTED]], %[[TWO_N]] : i64
// LOOPS-LABEL: func.func private @gather_0(
// LOOPS-SAME:      %[[EXTENT:[0-9]+]]: index)
// LOOPS:         arith.addi %{{.*}}, %[[EXTENT]] : index
// LOOPS:         arith.cmpi ult, %{{.*}}, %[[EXTENT]] : index
// LOOPS-LABEL: func.func @gather(
// LOOPS-SAME:      onnxc.check_sites = [{kind = "index", node = "step", op_type = "Gather", operand = "indices", symbolic_ranges = "-seq,seq-1"}]
// LOOPS:         %seq = arith.index_cast
// LOOPS:         func.call @check_indices_0(%i, %status, %seq) {onnxc.check_site = 0 : i64, onnxc.check_operands = [0 : i64, 1 : i64]}
// LOOPS-NEXT:    func.call @gather_0(%x, %i, %out0, %seq)

// -----

// GatherND's tuples address a symbolic and a static axis: one -1 bound, one static bound.
// GatherElements into an axis of size past+seq: one polynomial, two symbols (the kernel
// takes them sorted by name).

func.func @columns(%x: tensor<?x8xf32, #graph.dims<["seq"]>>, %i: tensor<3x2xi64>, %k: tensor<2x?xf32, #graph.dims<["past+seq"]>>, %j: tensor<2x3xi64>) -> (tensor<3xf32>, tensor<2x3xf32>) {
  %y = graph.gather_nd(%x, %i) {batch_dims = 0 : i64} : (tensor<?x8xf32, #graph.dims<["seq"]>>, tensor<3x2xi64>) -> tensor<3xf32>
  %z = graph.gather_elements(%k, %j) {axis = 1 : i64} : (tensor<2x?xf32, #graph.dims<["past+seq"]>>, tensor<2x3xi64>) -> tensor<2x3xf32>
  func.return %y, %z : tensor<3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @columns(
// CHECK-NEXT:    graph.check_indices(%i) {bounds = array<i64: -1, 8>, symbolic_bounds = #graph.dims<["seq"]>, negative = 1 : i64, node = "y", op_type = "GatherND", operand = "indices"} : tensor<3x2xi64>
// CHECK-NEXT:    %y = graph.gather_nd
// CHECK-NEXT:    graph.check_indices(%j) {bounds = array<i64: -1>, symbolic_bounds = #graph.dims<["past+seq"]>, negative = 1 : i64, node = "z", op_type = "GatherElements", operand = "indices"} : tensor<2x3xi64>
// CHECK-NEXT:    %z = graph.gather_elements

// LOOPS-LABEL: func.func private @check_indices_1(
// LOOPS-SAME:      %0: memref<2x3xi64>, %1: memref<3xi64>, %[[PAST:[0-9]+]]: index, %[[SEQ:[0-9]+]]: index)
// LOOPS:         arith.addi %[[PAST]], %[[SEQ]] : index
// LOOPS-LABEL: func.func @columns(
// LOOPS-SAME:      symbolic_ranges = "-seq,seq-1;-8,7"
// LOOPS-SAME:      symbolic_ranges = "-past-seq,past+seq-1"
// LOOPS:         func.call @check_indices_0(%i, %status, %seq)
// LOOPS:         func.call @check_indices_1(%j, %status, %past, %seq)

// -----

// A size may be 0, so a constant index into a symbolic axis is valid only at some sizes
// (-1 and 0 need a row, row 3 needs four): checked at run time like any other data.

func.func @constants(%x: tensor<?x8xf32, #graph.dims<["seq"]>>) -> (tensor<2x8xf32>, tensor<8xf32>) {
  %last = graph.constant {value = dense<[-1, 0]> : tensor<2xi64>} : tensor<2xi64>
  %three = graph.constant {value = dense<3> : tensor<i64>} : tensor<i64>
  %a = graph.gather(%x, %last) {axis = 0 : i64} : (tensor<?x8xf32, #graph.dims<["seq"]>>, tensor<2xi64>) -> tensor<2x8xf32>
  %b = graph.gather(%x, %three) {axis = 0 : i64} : (tensor<?x8xf32, #graph.dims<["seq"]>>, tensor<i64>) -> tensor<8xf32>
  func.return %a, %b : tensor<2x8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @constants(
// CHECK:         graph.check_indices(%last) {bounds = array<i64: -1>, symbolic_bounds = #graph.dims<["seq"]>, negative = 1 : i64, node = "a", op_type = "Gather", operand = "indices"} : tensor<2xi64>
// CHECK-NEXT:    %a = graph.gather(%x, %last)
// CHECK-NEXT:    graph.check_indices(%three) {bounds = array<i64: -1>, symbolic_bounds = #graph.dims<["seq"]>, negative = 1 : i64, node = "b", op_type = "Gather", operand = "indices"} : tensor<i64>
// CHECK-NEXT:    %b = graph.gather(%x, %three)
