// RUN: onnxc-opt %s -p fold-constant-if --split-input-file | filecheck %s

// An If on a constant condition becomes the ops of the branch it takes.
func.func @taken(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = graph.constant {value = dense<false> : tensor<i1>} : tensor<i1>
  %y = "graph.if"(%c) ({
    %a = graph.neg(%x) : (tensor<3xf32>) -> tensor<3xf32>
    graph.yield %a : tensor<3xf32>
  }, {
    %b = graph.abs(%x) : (tensor<3xf32>) -> tensor<3xf32>
    %d = graph.relu(%b) : (tensor<3xf32>) -> tensor<3xf32>
    graph.yield %d : tensor<3xf32>
  }) : (tensor<i1>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK-LABEL: func.func @taken(
// CHECK-NEXT:    %b = graph.abs(%x) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %d = graph.relu(%b) : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return %d : tensor<3xf32>

// -----

// A run-time condition keeps both branches.
func.func @kept(%c: tensor<1xi1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %y = "graph.if"(%c) ({
    graph.yield %x : tensor<3xf32>
  }, {
    %b = graph.abs(%x) : (tensor<3xf32>) -> tensor<3xf32>
    graph.yield %b : tensor<3xf32>
  }) : (tensor<1xi1>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK-LABEL: func.func @kept(
// CHECK-NEXT:    %y = graph.if(%c) {
