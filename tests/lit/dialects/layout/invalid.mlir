// RUN: onnxc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per verifier rule of the layout dialect.

%x = "test.op"() : () -> tensor<1x4x2x2xf32>
%y = layout.convert %x : tensor<1x4x2x2xf32> -> tensor<1x4x2x3xf32, #layout.spec<"NHWC">>
// CHECK: layout.convert: input and result differ in shape or type

// -----

%x = "test.op"() : () -> tensor<1x4x2xf32>
%y = layout.convert %x : tensor<1x4x2xf32> -> tensor<1x4x2xf32, #layout.spec<"NHWC">>
// CHECK: layout.convert: layout 'NHWC' does not fit a rank-3 tensor

// -----

%x = "test.op"() : () -> tensor<1x4x2x2xf32, #layout.spec<"NHHC">>
// CHECK: layout 'NHHC' repeats a dimension

// -----

%x = "test.op"() : () -> tensor<1x4x2x2xf32, #layout.spec<"NCHW8x">>
// CHECK: layout 'NCHW8x' blocks a dimension it does not have

// -----

%x = "test.op"() : () -> tensor<1x4x2x2xf32, #layout.spec<"nchw">>
// CHECK: layout 'nchw' is not letters with an optional block (NCHW16c)
