// --version, -o, --show-dialects and the generic-printing alias users know from mlir-opt.

// RUN: onnxc-opt --version | filecheck %s --check-prefix=VERSION
// RUN: onnxc-opt %s -o %t && filecheck %s --input-file=%t
// RUN: onnxc-opt %s --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: onnxc-opt --show-dialects | filecheck %s --check-prefix=DIALECTS

// VERSION:    onnxc-opt {{[0-9]+\.[0-9]+\.[0-9]+}} (xdsl 0.74.0)

func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = graph.neg(%x) : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// CHECK:      %0 = graph.neg(%x) : (tensor<2xf32>) -> tensor<2xf32>
// GENERIC:    %0 = "graph.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
// DIALECTS:   Available Dialects:
// DIALECTS-DAG: graph
// DIALECTS-DAG: func
