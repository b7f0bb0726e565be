// RUN: onnxc-opt %s -p convert-cf-to-llvm --split-input-file | filecheck %s

// A loop as convert-scf-to-cf builds it: the induction variable is a block argument,
// which becomes i64; its not-yet-converted users read it through a cast.
func.func @loop(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  cf.br ^bb1(%c0 : index)
^bb1(%i: index):
  %p = arith.cmpi slt, %i, %n : index
  cf.cond_br %p, ^bb2, ^bb3
^bb2:
  %next = arith.addi %i, %c1 : index
  cf.br ^bb1(%next : index)
^bb3:
  func.return
}

// CHECK-LABEL: func.func @loop(%n: index) {
// CHECK:        %c0_1 = builtin.unrealized_conversion_cast %c0 : index to i64
// CHECK-NEXT:   llvm.br ^bb1(%c0_1 : i64)
// CHECK-NEXT: ^bb1(%i: i64):
// CHECK-NEXT:   %i_1 = builtin.unrealized_conversion_cast %i : i64 to index
// CHECK-NEXT:   %p = arith.cmpi slt, %i_1, %n : index
// CHECK-NEXT:   llvm.cond_br %p, ^bb2, ^bb3
// CHECK-NEXT: ^bb2:
// CHECK-NEXT:   %next = arith.addi %i_1, %c1 : index
// CHECK-NEXT:   %next_1 = builtin.unrealized_conversion_cast %next : index to i64
// CHECK-NEXT:   llvm.br ^bb1(%next_1 : i64)
// CHECK-NEXT: ^bb3:
// CHECK-NEXT:   func.return

// -----

// Both successors of a conditional branch get their arguments; f32 needs no conversion.
func.func @select(%c: i1, %a: f32, %b: f32) -> f32 {
  cf.cond_br %c, ^bb1(%a : f32), ^bb1(%b : f32)
^bb1(%r: f32):
  func.return %r : f32
}

// CHECK-LABEL: func.func @select(%c: i1, %a: f32, %b: f32) -> f32 {
// CHECK-NEXT:   llvm.cond_br %c, ^bb1(%a : f32), ^bb1(%b : f32)
// CHECK-NEXT: ^bb1(%r: f32):
// CHECK-NEXT:   func.return %r : f32
