// RUN: onnxc-opt %s -p insert-runtime-checks | filecheck %s
// RUN: onnxc-opt %s -p insert-runtime-checks,convert-graph-to-loops | filecheck %s --check-prefix=LOOPS

// What the import's shape rules needed of symbolic sizes (`onnxc.size_guards`: here the
// inner dimensions of a MatMul over two unknowns `a` and `b` agree, and a stride-2 window
// fits `h`) is checked first thing in the run: a graph.check_sizes per guard, whose kernel
// evaluates the size for the run's symbols and reports it in the status record; the site
// keeps the reason for the InvalidInputError.

func.func @main(%x: tensor<4x?xf32, #graph.dims<["a"]>>, %w: tensor<?x3xf32, #graph.dims<["b"]>>, %h: tensor<?xf32, #graph.dims<["h"]>>) -> tensor<4x3xf32> attributes {onnxc.size_guards = [{guard = "a-b == 0", reason = "matmul inner dimensions differ: a == b", node = "mm", op_type = "MatMul"}, {guard = "floordiv(h+1, 2)-1 >= 0", reason = "window larger than the input", node = "pool", op_type = "MaxPool"}]} {
  %y = graph.matmul(%x, %w) : (tensor<4x?xf32, #graph.dims<["a"]>>, tensor<?x3xf32, #graph.dims<["b"]>>) -> tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @main(
// CHECK-NOT:     onnxc.size_guards
// CHECK-NEXT:    graph.check_sizes {guard = "a-b == 0", reason = "matmul inner dimensions differ: a == b", node = "mm", op_type = "MatMul", operand = "sizes"}
// CHECK-NEXT:    graph.check_sizes {guard = "floordiv(h+1, 2)-1 >= 0", reason = "window larger than the input", node = "pool", op_type = "MaxPool", operand = "sizes"}
// CHECK-NEXT:    %y = graph.matmul(%x, %w)

// LOOPS-LABEL: func.func private @check_sizes_0(
// LOOPS-SAME:      %0: memref<3xi64>, %[[A:[0-9]+]]: index, %[[B:[0-9]+]]: index)
// LOOPS:         %[[NB:.*]] = arith.muli %{{.*}}, %[[B]] : index
// LOOPS-NEXT:    %[[D:.*]] = arith.addi %[[A]], %[[NB]] : index
// LOOPS-NEXT:    %[[D64:.*]] = arith.index_cast %[[D]] : index to i64
// LOOPS-NEXT:    arith.cmpi ne, %[[D64]], %{{.*}} : i64
// LOOPS-LABEL: func.func private @check_sizes_1(
// LOOPS-SAME:      %0: memref<3xi64>, %[[H:[0-9]+]]: index)
// LOOPS:         %[[H1:.*]] = arith.addi %{{.*}}, %[[H]] : index
// LOOPS-NEXT:    arith.floordivsi %[[H1]], %{{.*}} : index
// LOOPS:         arith.cmpi slt
// LOOPS-LABEL: func.func @main(
// LOOPS-SAME:      onnxc.check_sites = [{kind = "size", node = "mm", op_type = "MatMul", operand = "sizes", guard = "a-b == 0", reason = "matmul inner dimensions differ: a == b"}, {kind = "size", node = "pool", op_type = "MaxPool", operand = "sizes", guard = "floordiv(h+1, 2)-1 >= 0", reason = "window larger than the input"}]
// LOOPS:         func.call @check_sizes_0(%{{.*}}, %a, %b) {onnxc.check_site = 0 : i64
// LOOPS:         func.call @check_sizes_1(%{{.*}}, %h_1) {onnxc.check_site = 1 : i64
