// RUN: onnxc-opt %s -p convert-to-llvm,reconcile-unrealized-casts | filecheck %s
// RUN: onnxc-opt %s -p convert-arith-to-llvm,convert-math-to-llvm,convert-vector-to-llvm,convert-memref-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts | filecheck %s

// One walk converts every loops-level dialect (arith, math, vector, memref, cf, func) and
// gives what the six per-dialect passes give in a row.

func.func private @k(%x: memref<4x16xf32>, %y: memref<4x16xf32>) attributes {onnxc.kernel = "graph.exp"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  cf.br ^loop(%c0 : index)
^loop(%i: index):
  %done = arith.cmpi sge, %i, %c4 : index
  cf.cond_br %done, ^exit, ^body
^body:
  %v = vector.load %x[%i, %c0] : memref<4x16xf32>, vector<16xf32>
  %e = math.exp %v : vector<16xf32>
  vector.store %e, %y[%i, %c0] : memref<4x16xf32>, vector<16xf32>
  %next = arith.addi %i, %c1 : index
  cf.br ^loop(%next : index)
^exit:
  func.return
}

// CHECK-LABEL: llvm.func internal @k(%x: !llvm.ptr {llvm.noalias}, %y: !llvm.ptr {llvm.noalias})
// CHECK-SAME:    no_inline
// CHECK:         llvm.br ^[[LOOP:.*]](%{{.*}} : i64)
// CHECK:       ^[[LOOP]](%i: i64):
// CHECK-NEXT:    %done = llvm.icmp "sge" %i, %{{.*}} : i64
// CHECK-NEXT:    llvm.cond_br %done, ^[[EXIT:.*]], ^[[BODY:.*]]
// CHECK:         llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xf32>
// CHECK-NOT:     math.
// CHECK-NOT:     llvm.call @expf
// CHECK:         llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<16xf32>, !llvm.ptr
// CHECK:         llvm.br ^[[LOOP]](%next : i64)
// CHECK:         llvm.return
// CHECK-NOT:     unrealized_conversion_cast
