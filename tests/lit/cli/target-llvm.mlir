// -t llvm prints LLVM IR through onnxc's llvmlite translation, for the host by default.

// RUN: onnxc-opt %s -t llvm | filecheck %s
// RUN: onnxc-opt %s -t 'llvm{triple=aarch64-unknown-linux-gnu}' | filecheck %s --check-prefix=TRIPLE

llvm.func @add(%a: i32, %b: i32) -> i32 {
  %0 = llvm.add %a, %b : i32
  llvm.return %0 : i32
}

// CHECK:      target triple = "{{.+}}"
// CHECK:      define i32 @"add"(i32 %{{.*}}, i32 %{{.*}})
// CHECK:        add i32
// CHECK:        ret i32
// TRIPLE:     target triple = "aarch64-unknown-linux-gnu"
