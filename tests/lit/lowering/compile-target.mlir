// RUN: onnxc-opt %s --compile-target x86-64-v4 -p convert-graph-to-loops | filecheck %s --check-prefix=V4
// RUN: onnxc-opt %s --compile-target x86-64-v3 -p convert-graph-to-loops | filecheck %s --check-prefix=V3
// RUN: not onnxc-opt %s --compile-target nonsense -p convert-graph-to-loops 2>&1 | filecheck %s --check-prefix=BAD

// Kernels are built for --compile-target, not for the host: the packed GEMM's vectors are
// 16 floats wide for AVX-512 (x86-64-v4) and 8 for AVX2 (x86-64-v3). The target is recorded
// on the module (onnxc.target), which had none.
func.func @matmul(%a: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %b = graph.constant {value = dense<0.5> : tensor<64x64xf32>} : tensor<64x64xf32>
  %y = graph.matmul(%a, %b) : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  func.return %y : tensor<8x64xf32>
}
// V4:         builtin.module attributes {onnxc.target = {name = "x86-64-v4"
// V4-LABEL: func.func private @matmul_0(
// V4:         vector<16xf32>
// V4-NOT:     vector<8xf32>
// V3-LABEL: func.func private @matmul_0(
// V3:         vector<8xf32>
// V3-NOT:     vector<16xf32>
// BAD: error: unknown target 'nonsense'
