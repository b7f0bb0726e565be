// RUN: onnxc-opt %s -p convert-scf-to-cf,convert-arith-to-llvm,convert-math-to-llvm,convert-memref-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s
// RUN: onnxc-opt %s -p convert-scf-to-cf,convert-func-to-llvm,convert-cf-to-llvm,convert-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,reconcile-unrealized-casts | filecheck %s --check-prefix=ANY-ORDER
// RUN: onnxc-opt %s -p convert-scf-to-cf,convert-arith-to-llvm,convert-math-to-llvm,convert-memref-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts -t llvm | filecheck %s --check-prefix=IR

// The whole loops -> LLVM chain on a kernel and an entry point: no cast survives, and the
// pass order does not matter.

func.func private @gelu_0(%x: memref<16xf32>, %y: memref<16xf32>) attributes {onnxc.kernel = "graph.gelu"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %half = arith.constant 0.5 : f32
  %one = arith.constant 1.0 : f32
  %rsqrt2 = arith.constant 0.70710678 : f32
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %x[%i] : memref<16xf32>
    %s = arith.mulf %v, %rsqrt2 : f32
    %e = math.erf %s : f32
    %t = arith.addf %e, %one : f32
    %h = arith.mulf %v, %half : f32
    %r = arith.mulf %h, %t : f32
    memref.store %r, %y[%i] : memref<16xf32>
  }
  func.return
}

func.func @main(%in: memref<16xf32>, %out: memref<16xi32>, %arena: memref<64xi8>) attributes {onnxc.entry} {
  %c0 = arith.constant 0 : index
  %tmp = memref.view %arena[%c0][] : memref<64xi8> to memref<16xf32>
  func.call @gelu_0(%in, %tmp) : (memref<16xf32>, memref<16xf32>) -> ()
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %tmp[%i] : memref<16xf32>
    %q = arith.fptosi %v : f32 to i32
    memref.store %q, %out[%i] : memref<16xi32>
  }
  func.return
}

// CHECK:       builtin.module {
// CHECK-NOT:     llvm.func @erff
// CHECK-LABEL:   llvm.func internal @gelu_0(%x: !llvm.ptr {llvm.noalias}, %y: !llvm.ptr {llvm.noalias})
// CHECK-SAME:        attributes {onnxc.kernel = "graph.gelu", no_inline} {
// CHECK-NOT:       builtin.unrealized_conversion_cast
// CHECK:           llvm.br ^bb1(%c0 : i64)
// CHECK-NEXT:    ^bb1(%i: i64):
// CHECK-NEXT:      %{{.*}} = llvm.icmp "slt" %i, %c16 : i64
// CHECK-NOT:       llvm.call @erff
// CHECK:           %e_{{.*}} = llvm.fdiv
// CHECK:           llvm.store %r, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK:           llvm.return
// CHECK-LABEL:   llvm.func @main(%in: !llvm.ptr {llvm.noalias}, %out: !llvm.ptr {llvm.noalias}, %arena: !llvm.ptr {llvm.noalias})
// CHECK-SAME:        attributes {onnxc.entry} {
// CHECK-NOT:       builtin.unrealized_conversion_cast
// CHECK:           %tmp = llvm.getelementptr inbounds %arena[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:      llvm.call @gelu_0(%in, %tmp) : (!llvm.ptr, !llvm.ptr) -> ()
// CHECK:           %q = llvmx.fptosi %{{.*}} : f32 to i32
// CHECK-NOT:       builtin.unrealized_conversion_cast

// ANY-ORDER:       llvm.func internal @gelu_0
// ANY-ORDER-NOT:   builtin.unrealized_conversion_cast
// ANY-ORDER:       llvm.func @main
// ANY-ORDER-NOT:   builtin.unrealized_conversion_cast
// ANY-ORDER:       llvm.return

// IR-NOT:   @"erff"
// IR:       define internal void @"gelu_0"(ptr noalias %".1", ptr noalias %".2") noinline nounwind
// IR:         call float @"llvm.maximum.f32"(float
// IR:       define void @"main"(ptr noalias %".1", ptr noalias %".2", ptr noalias %".3") nounwind
// IR:         call ccc void @"gelu_0"(ptr %".1", ptr
// IR:         fptosi float %{{.*}} to i32
