// The linear-probe baseline of the plasticity paper: multinomial logistic regression
// with L2 regularisation on the frozen model's pooled features (the head's input: the
// final-normed class token), fit to convergence in float64 with L-BFGS on the full
// batch. The objective is scikit-learn's LogisticRegression(C) with its intercept,
//   0.5 ||W||^2 + C sum_i CE(x_i W + b, y_i),
// computed divided by C N (the same minimiser, gradients of order one): the mean
// cross-entropy plus ||W||^2 / (2 C N). The bias is not penalised. Features are used as
// they are (not standardised), as scikit-learn does.
#pragma once

#include <cstdint>
#include <vector>

#include "data/loader.h"
#include "nn/vit.h"

namespace vitune::peft {

// Row-major features [count, dim] and a label per row.
struct ProbeFeatures {
  int64_t count = 0, dim = 0;
  std::vector<double> values;
  std::vector<int64_t> labels;
};

// The model's pooled features of the `batches` next batches of `loader`, without
// gradients, computed on the model's device and returned in float64.
ProbeFeatures extract_features(const nn::VisionTransformer& model, data::Loader& loader, int64_t batches);

struct LogisticOptions {
  double c = 1.0;                // inverse regularisation strength, as scikit-learn's C
  int64_t max_iterations = 10000;
  double tolerance = 1e-7;       // converged when every gradient entry is below this
  int memory = 10;               // L-BFGS's history
};

struct LogisticProbe {
  int64_t dim = 0, classes = 0;
  std::vector<double> weight;  // [dim, classes], row-major
  std::vector<double> bias;    // [classes]
  double objective = 0;        // at the solution, divided by C N as above
  double gradient_max = 0;     // the largest gradient entry's magnitude there
  int64_t iterations = 0;
  bool converged = false;
};

// The objective at parameters packed as [weight (dim x classes), bias (classes)], and
// its gradient into `gradient` (resized) when it is not null.
double logistic_objective(const ProbeFeatures& data, int64_t classes, double c, const std::vector<double>& parameters,
                          std::vector<double>* gradient);

// Fits from zero; labels must lie in [0, classes). Throws when the data are empty.
LogisticProbe fit_logistic_probe(const ProbeFeatures& train, int64_t classes, const LogisticOptions& options);

// The fraction of rows whose highest score is their label.
double probe_accuracy(const LogisticProbe& probe, const ProbeFeatures& data);

}  // namespace vitune::peft
