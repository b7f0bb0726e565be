// RUN: onnxc-opt %s -p convert-math-to-llvm | filecheck %s

// f32 exp / erf / tanh (scalar or vector) expand inline: no libm call, no llvm.exp / tanh
// intrinsic (LLVM would turn those into scalar expf / tanhf calls); f64 keeps libm.
%f, %d = "test.op"() : () -> (f32, f64)
%v = "test.op"() : () -> vector<16xf32>
%e = math.exp %f : f32
%t = math.tanh %v : vector<16xf32>
%r = math.erf %f : f32
%r64 = math.erf %d : f64

// CHECK-LABEL: builtin.module {
// CHECK-NEXT:    llvm.func @erf(f64) -> f64
// CHECK-NOT:     llvm.func @erff
// CHECK:         %e_{{.*}} = llvm.call_intrinsic "llvm.roundeven.f32"
// CHECK:         %e_{{.*}} = llvmx.fptosi %{{.*}} : f32 to i32
// CHECK:         %e_{{.*}} = llvm.bitcast %{{.*}} : i32 to f32
// CHECK:         %t_{{.*}} = llvm.call_intrinsic "llvm.maximum.v16f32"
// CHECK:         %t_{{.*}} = llvm.fdiv %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK-NOT:     llvm.call @erff
// CHECK:         %r_{{.*}} = llvm.fdiv %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %r64 = llvm.call @erf(%d) : (f64) -> f64
