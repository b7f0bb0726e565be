// RUN: onnxc-opt %s -p convert-scf-to-cf-with-while | filecheck %s

// scf.while becomes a condition block and a body block joined by branches (xDSL's
// convert-scf-to-cf has no scf.while); the scf.if inside the body lowers in the same walk.

func.func @count(%n: i64, %flag: i1) -> i64 {
  %zero = arith.constant 0 : i64
  %r = scf.while (%i = %zero) : (i64) -> i64 {
    %below = arith.cmpi slt, %i, %n : i64
    scf.condition(%below) %i : i64
  } do {
  ^bb0(%j: i64):
    %one = arith.constant 1 : i64
    %next = arith.addi %j, %one : i64
    scf.if %flag {
      "test.op"(%j) : (i64) -> ()
    }
    scf.yield %next : i64
  }
  func.return %r : i64
}

// CHECK-LABEL: func.func @count(%n: i64, %flag: i1) -> i64 {
// CHECK-NEXT:    %zero = arith.constant 0 : i64
// CHECK-NEXT:    cf.br ^[[BEFORE:.*]](%zero : i64)
// CHECK-NEXT:  ^[[BEFORE]](%i: i64):
// CHECK-NEXT:    %below = arith.cmpi slt, %i, %n : i64
// CHECK-NEXT:    cf.cond_br %below, ^[[AFTER:.*]](%i : i64), ^[[END:.*]](%i : i64)
// CHECK-NEXT:  ^[[AFTER]](%j: i64):
// CHECK-NEXT:    %one = arith.constant 1 : i64
// CHECK-NEXT:    %next = arith.addi %j, %one : i64
// CHECK-NEXT:    cf.cond_br %flag, ^[[THEN:.*]], ^[[JOIN:.*]]
// CHECK-NEXT:  ^[[THEN]]:
// CHECK-NEXT:    "test.op"(%j) : (i64) -> ()
// CHECK-NEXT:    cf.br ^[[JOIN]]
// CHECK-NEXT:  ^[[JOIN]]:
// CHECK-NEXT:    cf.br ^[[BEFORE]](%next : i64)
// CHECK-NEXT:  ^[[END]](%r: i64):
// CHECK-NEXT:    func.return %r : i64
