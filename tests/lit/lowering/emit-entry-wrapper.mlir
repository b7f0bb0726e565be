// RUN: onnxc-opt %s --split-input-file -p 'emit-entry-wrapper{entry=model}' | filecheck %s

// The wrapper reads one pointer per parameter of the entry function from argv, calls it and
// returns its i32 status (return-check-status: 0, or the failed check's site + 1).

llvm.func @model(%in: !llvm.ptr, %out: !llvm.ptr, %arena: !llvm.ptr) -> i32 {
  %0 = llvm.mlir.constant(0 : i32) : i32
  llvm.return %0 : i32
}

// CHECK-LABEL: llvm.func @onnxc_entry(%argv: !llvm.ptr) -> i32
// CHECK-NEXT:    %[[S0:.*]] = llvm.getelementptr %argv[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[P0:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[S1:.*]] = llvm.getelementptr %argv[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[P1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[S2:.*]] = llvm.getelementptr %argv[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[P2:.*]] = llvm.load %[[S2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[ST:.*]] = llvm.call @model(%[[P0]], %[[P1]], %[[P2]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// CHECK-NEXT:    llvm.return %[[ST]] : i32

// -----

// An entry that returns nothing (a pipeline without return-check-status) reports 0.

llvm.func @model(%in: !llvm.ptr) {
  llvm.return
}

// CHECK-LABEL: llvm.func @onnxc_entry(%argv: !llvm.ptr) -> i32
// CHECK:         llvm.call @model(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK-NEXT:    %[[Z:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    llvm.return %[[Z]] : i32
