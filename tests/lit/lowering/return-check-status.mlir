// RUN: onnxc-opt %s --split-input-file -p return-check-status | filecheck %s

// The entry returns an i32 status. After each check call it reads the record's `failed`
// word and returns the site number + 1 at once when it is set, so the kernels after a failed
// check never run; the record's arena offset is recorded for the runtime.

func.func private @check(%i: memref<2xi64>, %s: memref<3xi64>) attributes {onnxc.kernel = "graph.check_indices"} {
  func.return
}
func.func private @gather(%i: memref<2xi64>, %y: memref<2xf32>) attributes {onnxc.kernel = "graph.gather"} {
  func.return
}
func.func @main(%i: memref<2xi64>, %y: memref<2xf32>, %arena: memref<64xi8>) attributes {onnxc.entry} {
  %c64 = arith.constant 32 : index
  %status = memref.view %arena[%c64][] : memref<64xi8> to memref<3xi64>
  func.call @check(%i, %status) {onnxc.check_site = 0 : i64} : (memref<2xi64>, memref<3xi64>) -> ()
  func.call @gather(%i, %y) : (memref<2xi64>, memref<2xf32>) -> ()
  func.call @check(%i, %status) {onnxc.check_site = 1 : i64} : (memref<2xi64>, memref<3xi64>) -> ()
  func.call @gather(%i, %y) : (memref<2xi64>, memref<2xf32>) -> ()
  func.return
}

// CHECK-LABEL: func.func @main(
// CHECK-SAME:      -> i32 attributes {onnxc.entry, onnxc.status_offset = 32 : i64}
// CHECK:         func.call @check(%i, %status) {onnxc.check_site = 0 : i64}
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[F0:.*]] = memref.load %status[%[[C0]]] : memref<3xi64>
// CHECK-NEXT:    %[[Z0:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[B0:.*]] = arith.cmpi ne, %[[F0]], %[[Z0]] : i64
// CHECK-NEXT:    %[[S1:.*]] = arith.constant 1 : i32
// CHECK-NEXT:    cf.cond_br %[[B0]], ^[[FAILED:.*]](%[[S1]] : i32), ^[[NEXT:.*]]
// CHECK-NEXT:  ^[[NEXT]]:
// CHECK-NEXT:    func.call @gather(%i, %y)
// CHECK-NEXT:    func.call @check(%i, %status) {onnxc.check_site = 1 : i64}
// CHECK:         %[[S2:.*]] = arith.constant 2 : i32
// CHECK-NEXT:    cf.cond_br %{{.*}}, ^[[FAILED]](%[[S2]] : i32), ^[[LAST:.*]]
// CHECK-NEXT:  ^[[LAST]]:
// CHECK-NEXT:    func.call @gather(%i, %y)
// CHECK-NEXT:    %[[OK:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    func.return %[[OK]] : i32
// CHECK-NEXT:  ^[[FAILED]](%site: i32):
// CHECK-NEXT:    func.return %site : i32

// -----

// Without checks the entry just returns 0.

func.func @main(%x: memref<2xf32>) attributes {onnxc.entry} {
  func.return
}

// CHECK-LABEL: func.func @main(%x: memref<2xf32>) -> i32 attributes {onnxc.entry} {
// CHECK-NEXT:    %[[OK:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    func.return %[[OK]] : i32

// -----

// A kernel that checked its own indices (onnxc.check_fallback) only flags a failure: its
// failure branch runs the full check kernel on the checked operand to fill in the record.

func.func private @check(%i: memref<2xi64>, %s: memref<3xi64>) attributes {onnxc.kernel = "graph.check_indices"} {
  func.return
}
func.func private @gather(%x: memref<4xf32>, %i: memref<2xi64>, %s: memref<3xi64>, %y: memref<2xf32>) attributes {onnxc.kernel = "graph.gather"} {
  func.return
}
func.func @main(%x: memref<4xf32>, %i: memref<2xi64>, %y: memref<2xf32>, %arena: memref<64xi8>) attributes {onnxc.entry} {
  %c0 = arith.constant 0 : index
  %status = memref.view %arena[%c0][] : memref<64xi8> to memref<3xi64>
  func.call @gather(%x, %i, %status, %y) {onnxc.check_site = 0 : i64, onnxc.check_fallback = "check", onnxc.check_operands = [1 : i64, 2 : i64]} : (memref<4xf32>, memref<2xi64>, memref<3xi64>, memref<2xf32>) -> ()
  func.return
}

// CHECK-LABEL: func.func @main(
// CHECK:         func.call @gather(%x, %i, %status, %y)
// CHECK:         cf.cond_br %{{.*}}, ^[[FALLBACK:.*]](%{{.*}} : i32), ^[[NEXT:.*]]
// CHECK-NEXT:  ^[[NEXT]]:
// CHECK-NEXT:    %[[OK:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    func.return %[[OK]] : i32
// CHECK-NEXT:  ^[[FALLBACK]](%[[SITE:.*]]: i32):
// CHECK-NEXT:    func.call @check(%i, %status) : (memref<2xi64>, memref<3xi64>) -> ()
// CHECK-NEXT:    cf.br ^[[FAILED:.*]](%[[SITE]] : i32)
// CHECK-NEXT:  ^[[FAILED]](%site: i32):
// CHECK-NEXT:    func.return %site : i32

// -----

// After a loop with checks inside, the nested_checks call has no fixed site: the check that
// failed in the loop recorded its site + 1 in the cell that is the call's first operand, and
// that is the status returned.

func.func private @nested(%f: memref<1xi64>, %s: memref<3xi64>) attributes {onnxc.kernel = "graph.nested_checks"} {
  func.return
}
func.func @main(%arena: memref<64xi8>) attributes {onnxc.entry} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %failed_site = memref.view %arena[%c0][] : memref<64xi8> to memref<1xi64>
  %status = memref.view %arena[%c32][] : memref<64xi8> to memref<3xi64>
  func.call @nested(%failed_site, %status) {onnxc.check_site = -1 : i64, onnxc.nested_checks = 0 : i64} : (memref<1xi64>, memref<3xi64>) -> ()
  func.return
}

// CHECK-LABEL: func.func @main(
// CHECK:         func.call @nested(%failed_site, %status)
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[FLAG:.*]] = memref.load %status[%[[C0]]] : memref<3xi64>
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[BAD:.*]] = arith.cmpi ne, %[[FLAG]], %[[Z]] : i64
// CHECK-NEXT:    %[[RECORDED:.*]] = memref.load %failed_site[%[[C0]]] : memref<1xi64>
// CHECK-NEXT:    %[[CODE:.*]] = arith.trunci %[[RECORDED]] : i64 to i32
// CHECK-NEXT:    cf.cond_br %[[BAD]], ^{{.*}}(%[[CODE]] : i32), ^{{.*}}
