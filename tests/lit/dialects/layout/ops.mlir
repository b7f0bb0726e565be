// RUN: onnxc-opt %s | onnxc-opt | filecheck %s
// RUN: onnxc-opt %s --print-op-generic | onnxc-opt | filecheck %s

// Tensors keep their logical (NCHW) shape; the encoding names the memory order.

// CHECK-LABEL: func.func @to_nhwc_and_back
// CHECK-NEXT:    %y = layout.convert %x : tensor<1x64x56x56xf32> -> tensor<1x64x56x56xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %r = graph.relu(%y) : (tensor<1x64x56x56xf32, #layout.spec<"NHWC">>) -> tensor<1x64x56x56xf32, #layout.spec<"NHWC">>
// CHECK-NEXT:    %z = layout.convert %r : tensor<1x64x56x56xf32, #layout.spec<"NHWC">> -> tensor<1x64x56x56xf32>
func.func @to_nhwc_and_back(%x: tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32> {
  %y = layout.convert %x : tensor<1x64x56x56xf32> -> tensor<1x64x56x56xf32, #layout.spec<"NHWC">>
  %r = graph.relu(%y) : (tensor<1x64x56x56xf32, #layout.spec<"NHWC">>) -> tensor<1x64x56x56xf32, #layout.spec<"NHWC">>
  %z = layout.convert %r : tensor<1x64x56x56xf32, #layout.spec<"NHWC">> -> tensor<1x64x56x56xf32>
  func.return %z : tensor<1x64x56x56xf32>
}

// A blocked layout: C split into blocks of 16 (the last one zero-padded in memory).
// CHECK-LABEL: func.func @blocked
// CHECK-NEXT:    %y = layout.convert %x : tensor<1x60x7x7xf32> -> tensor<1x60x7x7xf32, #layout.spec<"NCHW16c">>
func.func @blocked(%x: tensor<1x60x7x7xf32>) -> tensor<1x60x7x7xf32, #layout.spec<"NCHW16c">> {
  %y = layout.convert %x : tensor<1x60x7x7xf32> -> tensor<1x60x7x7xf32, #layout.spec<"NCHW16c">>
  func.return %y : tensor<1x60x7x7xf32, #layout.spec<"NCHW16c">>
}

// A tensor of symbolic size names its layout in its #graph.dims (unblocked).
// CHECK-LABEL: func.func @symbolic
// CHECK-NEXT:    %y = layout.convert %x : tensor<1x64x?x?xf32, #graph.dims<["h", "w"]>> -> tensor<1x64x?x?xf32, #graph.dims<["h", "w"], "NHWC">>
func.func @symbolic(%x: tensor<1x64x?x?xf32, #graph.dims<["h", "w"]>>) -> tensor<1x64x?x?xf32, #graph.dims<["h", "w"], "NHWC">> {
  %y = layout.convert %x : tensor<1x64x?x?xf32, #graph.dims<["h", "w"]>> -> tensor<1x64x?x?xf32, #graph.dims<["h", "w"], "NHWC">>
  func.return %y : tensor<1x64x?x?xf32, #graph.dims<["h", "w"], "NHWC">>
}
