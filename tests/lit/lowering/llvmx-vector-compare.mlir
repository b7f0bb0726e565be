// RUN: onnxc-opt %s | filecheck %s
// RUN: onnxc-opt %s -p convert-arith-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts -t llvm | filecheck %s --check-prefix=IR

// Lane-wise compares and selects (xDSL's arith and llvm ones are scalar only): the tree
// ensembles' vector form tests sixteen nodes with one llvmx.vfcmp and picks leaves with
// llvmx.vselect.

func.func @pick(%a: vector<16xf32>, %b: vector<16xf32>) -> vector<16xf32> {
  %le = "llvmx.vfcmp"(%a, %b) <{predicate = "ole"}> : (vector<16xf32>, vector<16xf32>) -> vector<16xi1>
  %nan = "llvmx.vfcmp"(%a, %a) <{predicate = "uno"}> : (vector<16xf32>, vector<16xf32>) -> vector<16xi1>
  %gt = "llvmx.vfcmp"(%a, %b) <{predicate = "ugt"}> : (vector<16xf32>, vector<16xf32>) -> vector<16xi1>
  %either = arith.ori %le, %nan : vector<16xi1>
  %both = arith.andi %either, %gt : vector<16xi1>
  %r = "llvmx.vselect"(%both, %a, %b) : (vector<16xi1>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
  func.return %r : vector<16xf32>
}

// CHECK-LABEL: func.func @pick
// CHECK:         %le = "llvmx.vfcmp"(%a, %b) <{predicate = "ole"}> : (vector<16xf32>, vector<16xf32>) -> vector<16xi1>
// CHECK:         %r = "llvmx.vselect"(%both, %a, %b) : (vector<16xi1>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>

// IR-LABEL: define <16 x float> @"pick"
// IR:         fcmp ole <16 x float>
// IR:         fcmp uno <16 x float>
// IR:         fcmp ugt <16 x float>
// IR:         select <16 x i1> %{{.*}}, <16 x float>
