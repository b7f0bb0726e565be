// RUN: onnxc-opt %s --compile-target x86-64-v2 -p convert-graph-to-loops | filecheck %s

// A module that records its target (onnxc.target) is built for it: --compile-target only
// gives a target to a module without one. This module records x86-64-v4, so its packed GEMM
// has AVX-512's vectors of 16 floats, not the 4 of x86-64-v2's SSE.
builtin.module attributes {onnxc.target = {name = "x86-64-v4", triple = "x86_64-unknown-linux-gnu", cpu = "x86-64-v4", features = "+cx16,+popcnt,+sse3,+sse4.1,+sse4.2,+ssse3,+avx,+avx2,+bmi,+bmi2,+f16c,+fma,+lzcnt,+movbe,+xsave,+avx512f,+avx512bw,+avx512cd,+avx512dq,+avx512vl"}} {
  func.func @matmul(%a: tensor<8x64xf32>) -> tensor<8x64xf32> {
    %b = graph.constant {value = dense<0.5> : tensor<64x64xf32>} : tensor<64x64xf32>
    %y = graph.matmul(%a, %b) : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    func.return %y : tensor<8x64xf32>
  }
}
// CHECK:       builtin.module attributes {onnxc.target = {name = "x86-64-v4"
// CHECK-LABEL: func.func private @matmul_0(
// CHECK:         vector<16xf32>
// CHECK-NOT:     vector<4xf32>
