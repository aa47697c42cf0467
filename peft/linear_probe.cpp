// The logistic-regression probe: feature extraction, the objective and its gradient,
// and L-BFGS (two-loop recursion, backtracking line search with Armijo's condition).
#include "peft/linear_probe.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>

#include "autograd/variable.h"
#include "engine/error.h"

namespace vitune::peft {

namespace {

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

// Row i's scores x_i W + b into `scores`.
void row_scores(const ProbeFeatures& data, int64_t i, int64_t classes, const double* weight, const double* bias,
                std::vector<double>& scores) {
  std::copy(bias, bias + classes, scores.begin());
  const double* x = data.values.data() + i * data.dim;
  for (int64_t d = 0; d < data.dim; ++d) {
    const double* w = weight + d * classes;
    for (int64_t k = 0; k < classes; ++k) scores[size_t(k)] += x[d] * w[k];
  }
}

// The search direction -H g of L-BFGS's two-loop recursion over the history (s, y).
std::vector<double> direction(const std::vector<double>& gradient, const std::deque<std::vector<double>>& s,
                              const std::deque<std::vector<double>>& y) {
  std::vector<double> q = gradient;
  std::vector<double> alpha(s.size());
  for (size_t j = s.size(); j-- > 0;) {
    alpha[j] = dot(s[j], q) / dot(y[j], s[j]);
    for (size_t i = 0; i < q.size(); ++i) q[i] -= alpha[j] * y[j][i];
  }
  if (!s.empty()) {
    const double gamma = dot(s.back(), y.back()) / dot(y.back(), y.back());
    for (double& v : q) v *= gamma;
  }
  for (size_t j = 0; j < s.size(); ++j) {
    const double beta = dot(y[j], q) / dot(y[j], s[j]);
    for (size_t i = 0; i < q.size(); ++i) q[i] += (alpha[j] - beta) * s[j][i];
  }
  for (double& v : q) v = -v;
  return q;
}

}  // namespace

ProbeFeatures extract_features(const nn::VisionTransformer& model, data::Loader& loader, int64_t batches) {
  autograd::NoGradGuard no_grad;
  ProbeFeatures out;
  for (int64_t b = 0; b < batches; ++b) {
    data::Batch batch = loader.next();
    if (batch.labels.numel() == 0) continue;  // every image of the batch was unreadable
    const Tensor features = model.features(autograd::Variable(batch.images.to(model.device()))).value();
    const std::vector<float> values = features.to(DType::F32).to_vector<float>();
    const std::vector<int64_t> labels = batch.labels.to_vector<int64_t>();
    out.dim = features.shape().back();
    out.values.insert(out.values.end(), values.begin(), values.end());
    out.labels.insert(out.labels.end(), labels.begin(), labels.end());
  }
  out.count = int64_t(out.labels.size());
  return out;
}

double logistic_objective(const ProbeFeatures& data, int64_t classes, double c, const std::vector<double>& parameters,
                          std::vector<double>* gradient) {
  const int64_t n = data.count, dim = data.dim;
  VITUNE_CHECK(parameters.size() == size_t((dim + 1) * classes), "logistic probe: expected ", (dim + 1) * classes,
               " parameters, got ", parameters.size());
  const double* weight = parameters.data();
  const double* bias = weight + dim * classes;
  if (gradient) gradient->assign(parameters.size(), 0.0);
  std::vector<double> scores(size_t(classes), 0.0);
  double loss = 0;
  for (int64_t i = 0; i < n; ++i) {
    row_scores(data, i, classes, weight, bias, scores);
    const double top = *std::max_element(scores.begin(), scores.end());
    double sum = 0;
    for (double s : scores) sum += std::exp(s - top);
    const double log_sum = top + std::log(sum);
    const int64_t label = data.labels[size_t(i)];
    loss += log_sum - scores[size_t(label)];
    if (!gradient) continue;
    const double* x = data.values.data() + i * dim;
    for (int64_t k = 0; k < classes; ++k) scores[size_t(k)] = std::exp(scores[size_t(k)] - log_sum);  // p
    scores[size_t(label)] -= 1;  // p - onehot
    for (int64_t d = 0; d < dim; ++d) {
      double* g = gradient->data() + d * classes;
      for (int64_t k = 0; k < classes; ++k) g[k] += x[d] * scores[size_t(k)];
    }
    double* gb = gradient->data() + dim * classes;
    for (int64_t k = 0; k < classes; ++k) gb[k] += scores[size_t(k)];
  }
  const double decay = 1.0 / (c * double(n));  // 0.5 ||W||^2 / (C N)
  double squared = 0;
  for (int64_t j = 0; j < dim * classes; ++j) squared += weight[j] * weight[j];
  if (gradient) {
    for (double& g : *gradient) g /= double(n);
    for (int64_t j = 0; j < dim * classes; ++j) (*gradient)[size_t(j)] += decay * weight[j];
  }
  return loss / double(n) + 0.5 * decay * squared;
}

LogisticProbe fit_logistic_probe(const ProbeFeatures& train, int64_t classes, const LogisticOptions& options) {
  VITUNE_CHECK(train.count > 0 && train.dim > 0, "logistic probe: no training features");
  VITUNE_CHECK(classes >= 2, "logistic probe: expected at least 2 classes, got ", classes);
  VITUNE_CHECK(options.c > 0 && std::isfinite(options.c), "logistic probe: C must be positive, got ", options.c);
  for (int64_t label : train.labels) {
    VITUNE_CHECK(label >= 0 && label < classes, "logistic probe: label ", label, " is outside [0, ", classes, ")");
  }
  LogisticProbe probe;
  probe.dim = train.dim;
  probe.classes = classes;
  std::vector<double> x(size_t((train.dim + 1) * classes), 0.0), g, candidate, g_candidate;
  double f = logistic_objective(train, classes, options.c, x, &g);
  std::deque<std::vector<double>> s_history, y_history;
  for (; probe.iterations < options.max_iterations && max_abs(g) > options.tolerance; ++probe.iterations) {
    std::vector<double> d = direction(g, s_history, y_history);
    double slope = dot(g, d);
    if (!(slope < 0)) {  // not a descent direction: forget the history
      s_history.clear();
      y_history.clear();
      d = direction(g, s_history, y_history);
      slope = dot(g, d);
    }
    // The first step of steepest descent is scaled to a unit change, as PyTorch's L-BFGS does.
    double step = s_history.empty() ? std::min(1.0, 1.0 / std::max(1e-300, std::sqrt(dot(g, g)))) : 1.0;
    double f_candidate = 0;
    bool accepted = false;
    for (int halvings = 0; halvings < 60; ++halvings, step *= 0.5) {
      candidate = x;
      for (size_t i = 0; i < x.size(); ++i) candidate[i] += step * d[i];
      f_candidate = logistic_objective(train, classes, options.c, candidate, &g_candidate);
      accepted = f_candidate <= f + 1e-4 * step * slope;
      if (accepted) break;
    }
    if (!accepted) break;  // no decrease left at double precision
    std::vector<double> s(x.size()), y(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      s[i] = candidate[i] - x[i];
      y[i] = g_candidate[i] - g[i];
    }
    if (dot(s, y) > 1e-12 * dot(y, y)) {
      s_history.push_back(std::move(s));
      y_history.push_back(std::move(y));
      if (int(s_history.size()) > options.memory) {
        s_history.pop_front();
        y_history.pop_front();
      }
    }
    x.swap(candidate);
    g.swap(g_candidate);
    f = f_candidate;
  }
  probe.objective = f;
  probe.gradient_max = max_abs(g);
  probe.converged = probe.gradient_max <= options.tolerance;
  probe.weight.assign(x.begin(), x.begin() + train.dim * classes);
  probe.bias.assign(x.begin() + train.dim * classes, x.end());
  return probe;
}

double probe_accuracy(const LogisticProbe& probe, const ProbeFeatures& data) {
  VITUNE_CHECK(data.dim == probe.dim, "logistic probe: features of dimension ", data.dim, " for a probe of ",
               probe.dim);
  if (data.count == 0) return 0;
  std::vector<double> scores(size_t(probe.classes));
  int64_t correct = 0;
  for (int64_t i = 0; i < data.count; ++i) {
    row_scores(data, i, probe.classes, probe.weight.data(), probe.bias.data(), scores);
    correct += std::max_element(scores.begin(), scores.end()) - scores.begin() == data.labels[size_t(i)];
  }
  return double(correct) / double(data.count);
}

}  // namespace vitune::peft
