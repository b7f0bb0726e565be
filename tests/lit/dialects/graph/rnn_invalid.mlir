// RUN: onnxc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: onnxc-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ALL-FAIL

// One case per verifier rule of the recurrence ops (graph_rnn.py); no chunk may verify.
// ALL-FAIL-NOT: builtin.module {

%g, %r = "test.op"() : () -> (tensor<3x2x1x12xf32>, tensor<1x12x4xf32>)
%y, %yh, %yc = graph.lstm_recurrence(%g, %r) {direction = "forward", activations = ["Sigmoid", "Tanh", "Tanh"], activation_alpha = array<f64: 0.0, 0.0, 0.0>, activation_beta = array<f64: 0.0, 0.0, 0.0>, layout = 0 : i64, input_forget = 0 : i64} : tensor<3x2x1x12xf32>, tensor<1x12x4xf32> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.lstm_recurrence: recurrence (1, 12, 4) is not [directions, 4 * hidden, hidden]

// -----

%g, %r = "test.op"() : () -> (tensor<3x2x1x4xf32>, tensor<1x4x4xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) {direction = "bidirectional", activations = ["Tanh"], activation_alpha = array<f64: 0.0>, activation_beta = array<f64: 0.0>, layout = 0 : i64} : tensor<3x2x1x4xf32>, tensor<1x4x4xf32> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: 1 directions do not fit direction 'bidirectional'

// -----

%g, %r = "test.op"() : () -> (tensor<3x2x1x4xf32>, tensor<1x4x4xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) {direction = "sideways", activations = ["Tanh"], activation_alpha = array<f64: 0.0>, activation_beta = array<f64: 0.0>, layout = 0 : i64} : tensor<3x2x1x4xf32>, tensor<1x4x4xf32> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: unknown direction 'sideways'

// -----

%g, %r = "test.op"() : () -> (tensor<3x2x1x4xf32>, tensor<1x4x4xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) {direction = "forward", activations = ["Swish"], activation_alpha = array<f64: 0.0>, activation_beta = array<f64: 0.0>, layout = 0 : i64} : tensor<3x2x1x4xf32>, tensor<1x4x4xf32> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: unknown activation 'Swish'

// -----

%g, %r = "test.op"() : () -> (tensor<3x2x1x4xf32>, tensor<1x4x4xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) {direction = "forward", activations = ["Tanh", "Tanh"], activation_alpha = array<f64: 0.0, 0.0>, activation_beta = array<f64: 0.0, 0.0>, layout = 0 : i64} : tensor<3x2x1x4xf32>, tensor<1x4x4xf32> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: 2 activations, expected 1

// -----

%g, %r = "test.op"() : () -> (tensor<3x2x1x4xf32>, tensor<1x4x4xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) {direction = "forward", activations = ["Tanh"], activation_alpha = array<f64>, activation_beta = array<f64: 0.0>, layout = 0 : i64} : tensor<3x2x1x4xf32>, tensor<1x4x4xf32> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: activation_alpha needs one value per activation (1)

// -----

%g, %r = "test.op"() : () -> (tensor<3x2x1x4xf32>, tensor<1x4x4xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) {direction = "forward", activations = ["Tanh"], activation_alpha = array<f64: 0.0>, activation_beta = array<f64: 0.0>, layout = 2 : i64} : tensor<3x2x1x4xf32>, tensor<1x4x4xf32> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: layout must be 0 or 1, not 2

// -----

%g, %r = "test.op"() : () -> (tensor<3x2x1x5xf32>, tensor<1x4x4xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) {direction = "forward", activations = ["Tanh"], activation_alpha = array<f64: 0.0>, activation_beta = array<f64: 0.0>, layout = 0 : i64} : tensor<3x2x1x5xf32>, tensor<1x4x4xf32> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: gates (3, 2, 1, 5) do not fit recurrence (1, 4, 4)

// -----

%g, %r, %l = "test.op"() : () -> (tensor<3x2x1x4xf32>, tensor<1x4x4xf32>, tensor<2xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) sequence_lens %l : tensor<2xf32> {direction = "forward", activations = ["Tanh"], activation_alpha = array<f64: 0.0>, activation_beta = array<f64: 0.0>, layout = 0 : i64} : tensor<3x2x1x4xf32>, tensor<1x4x4xf32> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: sequence_lens (2,) must be [2] integers

// -----

%g, %r, %h = "test.op"() : () -> (tensor<3x2x1x4xf32>, tensor<1x4x4xf32>, tensor<2x1x4xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) initial_h %h : tensor<2x1x4xf32> {direction = "forward", activations = ["Tanh"], activation_alpha = array<f64: 0.0>, activation_beta = array<f64: 0.0>, layout = 0 : i64} : tensor<3x2x1x4xf32>, tensor<1x4x4xf32> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: initial_h (2, 1, 4) differs from (1, 2, 4)

// -----

%g, %r = "test.op"() : () -> (tensor<3x2x1x4xf32>, tensor<1x4x4xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) {direction = "forward", activations = ["Tanh"], activation_alpha = array<f64: 0.0>, activation_beta = array<f64: 0.0>, layout = 0 : i64} : tensor<3x2x1x4xf32>, tensor<1x4x4xf32> -> tensor<2x1x3x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: result shapes [(2, 1, 3, 4), (1, 2, 4)] differ from inferred [(3, 1, 2, 4), (1, 2, 4)]

// -----

%g, %r, %h = "test.op"() : () -> (tensor<3x2x1x4xf32>, tensor<1x4x4xf64>, tensor<1x2x4xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) {direction = "forward", activations = ["Tanh"], activation_alpha = array<f64: 0.0>, activation_beta = array<f64: 0.0>, layout = 0 : i64} : tensor<3x2x1x4xf32>, tensor<1x4x4xf64> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: operand element types differ

// -----

%g, %r, %p = "test.op"() : () -> (tensor<3x2x1x8xf32>, tensor<1x8x2xf32>, tensor<1x4xf32>)
%y, %yh, %yc = graph.lstm_recurrence(%g, %r) peepholes %p : tensor<1x4xf32> {direction = "forward", activations = ["Sigmoid", "Tanh", "Tanh"], activation_alpha = array<f64: 0.0, 0.0, 0.0>, activation_beta = array<f64: 0.0, 0.0, 0.0>, layout = 0 : i64, input_forget = 0 : i64} : tensor<3x2x1x8xf32>, tensor<1x8x2xf32> -> tensor<3x1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xf32>
// CHECK: Operation does not verify: graph.lstm_recurrence: peepholes (1, 4) differ from (1, 6)

// -----

%g, %r = "test.op"() : () -> (tensor<3x2x1x6xf32>, tensor<1x6x2xf32>)
%y, %yh = graph.gru_recurrence(%g, %r) {direction = "forward", activations = ["Sigmoid", "Tanh"], activation_alpha = array<f64: 0.0, 0.0>, activation_beta = array<f64: 0.0, 0.0>, layout = 0 : i64, linear_before_reset = 1 : i64} : tensor<3x2x1x6xf32>, tensor<1x6x2xf32> -> tensor<3x1x2x2xf32>, tensor<1x2x2xf32>
// CHECK: Operation does not verify: graph.gru_recurrence: recurrence_bias goes with linear_before_reset = 1 only

// -----

%g, %r = "test.op"() : () -> (tensor<3x2x1x4xf32>, tensor<1x4x4xf32>)
%y, %yh = graph.rnn_recurrence(%g, %r) {direction = "forward", activations = ["Tanh"], activation_alpha = array<f64: 0.0>, activation_beta = array<f64: 0.0>, clip = -1.0 : f32, layout = 0 : i64} : tensor<3x2x1x4xf32>, tensor<1x4x4xf32> -> tensor<3x1x2x4xf32>, tensor<1x2x4xf32>
// CHECK: Operation does not verify: graph.rnn_recurrence: clip must be non-negative, not -1.0
