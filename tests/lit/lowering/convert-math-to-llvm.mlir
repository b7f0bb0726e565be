// RUN: onnxc-opt %s -p "convert-math-to-llvm{polynomials=false}" --split-input-file | filecheck %s

%f, %g, %h = "test.op"() : () -> (f32, f32, f32)
%exp = math.exp %f : f32
%log = math.log %f fastmath<fast> : f32
%sqrt = math.sqrt %f : f32
%abs = math.absf %f : f32
%floor = math.floor %f : f32
%ceil = math.ceil %f : f32
%sin = math.sin %f : f32
%cos = math.cos %f : f32
%log2 = math.log2 %f : f32
%exp2 = math.exp2 %f : f32
%pow = math.powf %f, %g : f32
%fma = math.fma %f, %g, %h : f32

// CHECK-LABEL: builtin.module {
// CHECK:      %exp = llvm.intr.exp(%f) : (f32) -> f32
// CHECK-NEXT: %log = llvm.intr.log(%f) {fastmathFlags = #llvm.fastmath<fast>} : (f32) -> f32
// CHECK-NEXT: %sqrt = llvm.intr.sqrt(%f) : (f32) -> f32
// CHECK-NEXT: %abs = llvm.intr.fabs(%f) : (f32) -> f32
// CHECK-NEXT: %floor = llvm.intr.floor(%f) : (f32) -> f32
// CHECK-NEXT: %ceil = llvm.intr.ceil(%f) : (f32) -> f32
// CHECK-NEXT: %sin = llvm.intr.sin(%f) : (f32) -> f32
// CHECK-NEXT: %cos = llvm.intr.cos(%f) : (f32) -> f32
// CHECK-NEXT: %log2 = llvm.intr.log2(%f) : (f32) -> f32
// CHECK-NEXT: %exp2 = llvm.intr.exp2(%f) : (f32) -> f32
// CHECK-NEXT: %pow = llvm.intr.pow(%f, %g) : (f32, f32) -> f32
// CHECK-NEXT: %fma = llvm.intr.fma(%f, %g, %h) : (f32, f32, f32) -> f32

// -----

// Intrinsics xDSL has no op for go through llvm.call_intrinsic, mangled by type.
%f, %d = "test.op"() : () -> (f32, f64)
%tanh = math.tanh %f : f32
%tanh64 = math.tanh %d : f64
%round = math.round %f : f32
%roundeven = math.roundeven %f : f32
%trunc = math.trunc %f : f32
%log10 = math.log10 %d : f64
%atan2 = math.atan2 %f, %f : f32

// CHECK-LABEL: builtin.module {
// CHECK:      %tanh = llvm.call_intrinsic "llvm.tanh.f32"(%f) : (f32) -> f32
// CHECK-NEXT: %tanh64 = llvm.call_intrinsic "llvm.tanh.f64"(%d) : (f64) -> f64
// CHECK-NEXT: %round = llvm.call_intrinsic "llvm.round.f32"(%f) : (f32) -> f32
// CHECK-NEXT: %roundeven = llvm.call_intrinsic "llvm.roundeven.f32"(%f) : (f32) -> f32
// CHECK-NEXT: %trunc = llvm.call_intrinsic "llvm.trunc.f32"(%f) : (f32) -> f32
// CHECK-NEXT: %log10 = llvm.call_intrinsic "llvm.log10.f64"(%d) : (f64) -> f64
// CHECK-NEXT: %atan2 = llvm.call_intrinsic "llvm.atan2.f32"(%f, %f) : (f32, f32) -> f32

// -----

// rsqrt is 1 / sqrt; integer abs passes `is_int_min_poison = false`.
%f = "test.op"() : () -> f32
%i = "test.op"() : () -> i32
%rsqrt = math.rsqrt %f : f32
%absi = math.absi %i : i32

// CHECK-LABEL: builtin.module {
// CHECK:      %rsqrt = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK-NEXT: %rsqrt_1 = llvm.intr.sqrt(%f) : (f32) -> f32
// CHECK-NEXT: %rsqrt_2 = llvm.fdiv %rsqrt, %rsqrt_1 : f32
// CHECK-NEXT: %absi = llvm.mlir.constant(false) : i1
// CHECK-NEXT: %absi_1 = llvm.call_intrinsic "llvm.abs.i32"(%i, %absi) : (i32, i1) -> i32

// -----

// erf has no LLVM intrinsic: call libm, declared once per module and type.
%f, %d = "test.op"() : () -> (f32, f64)
%a = math.erf %f : f32
%b = math.erf %f : f32
%c = math.erf %d : f64

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:   llvm.func @erf(f64) -> f64
// CHECK-NEXT:   llvm.func @erff(f32) -> f32
// CHECK-NEXT:   %f, %d = "test.op"() : () -> (f32, f64)
// CHECK-NEXT:   %a = llvm.call @erff(%f) : (f32) -> f32
// CHECK-NEXT:   %b = llvm.call @erff(%f) : (f32) -> f32
// CHECK-NEXT:   %c = llvm.call @erf(%d) : (f64) -> f64
// CHECK-NEXT: }
