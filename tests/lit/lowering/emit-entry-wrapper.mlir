// RUN: onnxc-opt %s -p 'emit-entry-wrapper{entry=model}' | filecheck %s

// The wrapper reads one pointer per parameter of the entry function from argv and calls it.

llvm.func @model(%in: !llvm.ptr, %out: !llvm.ptr, %arena: !llvm.ptr) {
  llvm.return
}

// CHECK-LABEL: llvm.func @onnxc_entry(%argv: !llvm.ptr)
// CHECK-NEXT:    %[[S0:.*]] = llvm.getelementptr %argv[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[P0:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[S1:.*]] = llvm.getelementptr %argv[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[P1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    %[[S2:.*]] = llvm.getelementptr %argv[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK-NEXT:    %[[P2:.*]] = llvm.load %[[S2]] : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.call @model(%[[P0]], %[[P1]], %[[P2]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return
