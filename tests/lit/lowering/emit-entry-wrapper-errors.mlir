// RUN: not onnxc-opt %s -p 'emit-entry-wrapper{entry=model}' 2>&1 | filecheck %s

// The status the runtime reads is an i32: an entry returning anything else is refused.

llvm.func @model(%in: !llvm.ptr) -> i64 {
  %0 = llvm.mlir.constant(0 : i64) : i64
  llvm.return %0 : i64
}

// CHECK: error: emit-entry-wrapper: @model must return i32 or nothing
