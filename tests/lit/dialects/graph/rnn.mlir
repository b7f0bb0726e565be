// RUN: ONNXC_ROUNDTRIP

// The recurrences of LSTM, GRU and RNN (graph_rnn.py): every optional operand, both layouts,
// printing generically and reparsing gives the custom syntax back. Their verifier failures
// are in rnn_invalid.mlir.

func.func @lstm_all(%g: tensor<3x2x2x20xf32>, %r: tensor<2x20x5xf32>, %l: tensor<2xi32>, %h: tensor<2x2x5xf32>, %c: tensor<2x2x5xf32>, %p: tensor<2x15xf32>) -> (tensor<3x2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x2x5xf32>) {
  %y, %yh, %yc = graph.lstm_recurrence(%g, %r) sequence_lens %l : tensor<2xi32> initial_h %h : tensor<2x2x5xf32> initial_c %c : tensor<2x2x5xf32> peepholes %p : tensor<2x15xf32> {direction = "bidirectional", activations = ["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Elu", "Softsign"], activation_alpha = array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 2.000000e-01, 1.000000e+00, 0.000000e+00>, activation_beta = array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 5.000000e-01, 0.000000e+00, 0.000000e+00>, clip = 3.000000e+00 : f32, layout = 0 : i64, input_forget = 0 : i64} : tensor<3x2x2x20xf32>, tensor<2x20x5xf32> -> tensor<3x2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x2x5xf32>
  func.return %y, %yh, %yc : tensor<3x2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x2x5xf32>
}
// CHECK-LABEL: func.func @lstm_all(
// CHECK-NEXT:    %y, %yh, %yc = graph.lstm_recurrence(%g, %r) sequence_lens %l : tensor<2xi32> initial_h %h : tensor<2x2x5xf32> initial_c %c : tensor<2x2x5xf32> peepholes %p : tensor<2x15xf32> {direction = "bidirectional", activations = ["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Elu", "Softsign"]
// CHECK-SAME:    clip = 3.000000e+00 : f32, layout = 0 : i64, input_forget = 0 : i64} : tensor<3x2x2x20xf32>, tensor<2x20x5xf32> -> tensor<3x2x2x5xf32>, tensor<2x2x5xf32>, tensor<2x2x5xf32>
// CHECK-NEXT:    func.return %y, %yh, %yc

// -----

func.func @lstm_minimal_batchwise(%g: tensor<4x3x1x8xf32>, %r: tensor<1x8x2xf32>) -> tensor<4x1x2xf32> {
  %y, %yh, %yc = graph.lstm_recurrence(%g, %r) {direction = "reverse", activations = ["Sigmoid", "Tanh", "Tanh"], activation_alpha = array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00>, activation_beta = array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00>, layout = 1 : i64, input_forget = 1 : i64} : tensor<4x3x1x8xf32>, tensor<1x8x2xf32> -> tensor<4x3x1x2xf32>, tensor<4x1x2xf32>, tensor<4x1x2xf32>
  func.return %yc : tensor<4x1x2xf32>
}
// CHECK-LABEL: func.func @lstm_minimal_batchwise(
// CHECK-NEXT:    %y, %yh, %yc = graph.lstm_recurrence(%g, %r) {direction = "reverse", {{.*}} layout = 1 : i64, input_forget = 1 : i64} : tensor<4x3x1x8xf32>, tensor<1x8x2xf32> -> tensor<4x3x1x2xf32>, tensor<4x1x2xf32>, tensor<4x1x2xf32>

// -----

func.func @gru(%g: tensor<3x2x1x15xf32>, %r: tensor<1x15x5xf32>, %rb: tensor<1x5xf32>, %h: tensor<1x2x5xf32>, %g0: tensor<3x2x1x15xf64>, %r0: tensor<1x15x5xf64>) -> (tensor<1x2x5xf32>, tensor<3x1x2x5xf64>) {
  %y, %yh = graph.gru_recurrence(%g, %r) recurrence_bias %rb : tensor<1x5xf32> initial_h %h : tensor<1x2x5xf32> {direction = "forward", activations = ["Sigmoid", "Tanh"], activation_alpha = array<f64: 0.000000e+00, 0.000000e+00>, activation_beta = array<f64: 0.000000e+00, 0.000000e+00>, layout = 0 : i64, linear_before_reset = 1 : i64} : tensor<3x2x1x15xf32>, tensor<1x15x5xf32> -> tensor<3x1x2x5xf32>, tensor<1x2x5xf32>
  %y0, %yh0 = graph.gru_recurrence(%g0, %r0) {direction = "forward", activations = ["Sigmoid", "Tanh"], activation_alpha = array<f64: 0.000000e+00, 0.000000e+00>, activation_beta = array<f64: 0.000000e+00, 0.000000e+00>, layout = 0 : i64, linear_before_reset = 0 : i64} : tensor<3x2x1x15xf64>, tensor<1x15x5xf64> -> tensor<3x1x2x5xf64>, tensor<1x2x5xf64>
  func.return %yh, %y0 : tensor<1x2x5xf32>, tensor<3x1x2x5xf64>
}
// CHECK-LABEL: func.func @gru(
// CHECK-NEXT:    %y, %yh = graph.gru_recurrence(%g, %r) recurrence_bias %rb : tensor<1x5xf32> initial_h %h : tensor<1x2x5xf32> {direction = "forward", {{.*}} linear_before_reset = 1 : i64}
// CHECK-NEXT:    %y0, %yh0 = graph.gru_recurrence(%g0, %r0) {direction = "forward", {{.*}} linear_before_reset = 0 : i64} : tensor<3x2x1x15xf64>, tensor<1x15x5xf64> -> tensor<3x1x2x5xf64>, tensor<1x2x5xf64>

// -----

func.func @rnn(%g: tensor<2x3x2x4xf32>, %r: tensor<2x4x4xf32>, %l: tensor<3xi64>) -> tensor<2x2x3x4xf32> {
  %y, %yh = graph.rnn_recurrence(%g, %r) sequence_lens %l : tensor<3xi64> {direction = "bidirectional", activations = ["Relu", "LeakyRelu"], activation_alpha = array<f64: 0.000000e+00, 1.000000e-02>, activation_beta = array<f64: 0.000000e+00, 0.000000e+00>, layout = 0 : i64} : tensor<2x3x2x4xf32>, tensor<2x4x4xf32> -> tensor<2x2x3x4xf32>, tensor<2x3x4xf32>
  func.return %y : tensor<2x2x3x4xf32>
}
// CHECK-LABEL: func.func @rnn(
// CHECK-NEXT:    %y, %yh = graph.rnn_recurrence(%g, %r) sequence_lens %l : tensor<3xi64> {direction = "bidirectional", activations = ["Relu", "LeakyRelu"], activation_alpha = array<f64: 0.000000e+00, 1.000000e-02>, activation_beta = array<f64: 0.000000e+00, 0.000000e+00>, layout = 0 : i64} : tensor<2x3x2x4xf32>, tensor<2x4x4xf32> -> tensor<2x2x3x4xf32>, tensor<2x3x4xf32>
