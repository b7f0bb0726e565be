// --split-input-file reports every failing chunk, goes on with the next, and exits 1;
// `-` reads stdin.

// RUN: not onnxc-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=ERR
// RUN: not onnxc-opt %s --split-input-file 2>/dev/null | filecheck %s
// RUN: not onnxc-opt - < %s --split-input-file -p cse 2>&1 | filecheck %s --check-prefix=STDIN

func.func @first(%x: tensor<2xf32>, %y: tensor<2xi32>) -> tensor<2xf32> {
  %0 = graph.add(%x, %y) : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @second(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}

// -----

func.func @third(%x: tensor<2xf32>, %y: tensor<2xi32>) -> tensor<2xf32> {
  %0 = graph.mul(%x, %y) : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// ERR:      split-input-errors.mlir:9:3: error: 'graph.add' op operand element types differ
// ERR-NEXT: split-input-errors.mlir:22:3: error: 'graph.mul' op operand element types differ

// CHECK:     func.func @second

// STDIN:     <stdin>:9:3: error: 'graph.add' op
// STDIN:     func.func @second
// STDIN:     <stdin>:22:3: error: 'graph.mul' op
