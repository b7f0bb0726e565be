// A file with an op nobody registered (read by ../invalid-ir.mlir).
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.no_such_op(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
