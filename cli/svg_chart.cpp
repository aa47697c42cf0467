// The SVG chart writer: axes with "nice" ticks (1, 2, 5 x 10^k; on log axes decades,
// with their 2s and 5s, or more, when few decades are shown), a plot area, series
// drawn as polylines or grouped bars, error bars, and a legend right of the plot.
#include "cli/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/atomic_file.h"
#include "engine/error.h"

namespace vitune::cli {

namespace {

constexpr double kWidth = 820, kHeight = 480;
constexpr double kLeft = 84, kRight = 200, kTop = 52, kBottom = 66;
constexpr double kPlotWidth = kWidth - kLeft - kRight, kPlotHeight = kHeight - kTop - kBottom;
const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

const char* color(size_t series) { return kColors[series % (sizeof kColors / sizeof kColors[0])]; }

std::string number(const char* pattern, double value) {
  char text[48];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::string px(double value) { return number("%.1f", value); }

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// 1, 2 or 5 times a power of ten, near range / target.
double nice_step(double range, int target) {
  const double raw = range / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * magnitude;
}

std::string linear_tick_text(double value, double step) {
  if (std::fabs(value) < step * 1e-9) return "0";
  if (std::fabs(value) >= 1e5 || step < 1e-4) return number("%.3g", value);
  const int decimals = std::max(0, int(-std::floor(std::log10(step) + 1e-9)));
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

struct Tick {
  double value;
  std::string text;
};

// An axis over values in data units; lo and hi are in axis units (log10 on a log axis).
struct Axis {
  bool log = false;
  double lo = 0, hi = 1;
  std::vector<Tick> ticks;

  bool usable(double v) const { return std::isfinite(v) && (!log || v > 0); }
  // 0 at lo, 1 at hi.
  double fraction(double v) const { return ((log ? std::log10(v) : v) - lo) / (hi - lo); }
};

void linear_ticks(Axis& axis, double lo, double hi, bool log_values) {
  const double step = nice_step(hi - lo, 7);
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; ++k) {
    const double v = k * step;
    axis.ticks.push_back({v, log_values ? number("%g", v) : linear_tick_text(v, step)});
  }
}

// An axis covering `values` with a margin; with include_zero (bars) it starts at 0.
Axis make_axis(const std::vector<double>& values, bool log, bool include_zero) {
  Axis axis;
  axis.log = log;
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (!axis.usable(v)) continue;
    const double a = log ? std::log10(v) : v;
    lo = std::min(lo, a);
    hi = std::max(hi, a);
  }
  if (!std::isfinite(lo)) lo = hi = log ? 0 : 0.5;
  if (include_zero) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    const double half = log ? 0.5 : std::max(std::fabs(hi) * 0.1, 0.5);
    lo -= half;
    hi += half;
  }
  const double pad = 0.06 * (hi - lo);
  axis.lo = include_zero && lo == 0 ? 0 : lo - pad;
  axis.hi = include_zero && hi == 0 ? 0 : hi + pad;
  if (!log) {
    linear_ticks(axis, axis.lo, axis.hi, false);
    return axis;
  }
  const double span = axis.hi - axis.lo;
  const std::vector<double> mantissas = span <= 1.2   ? std::vector<double>{1, 1.5, 2, 3, 4, 5, 7}
                                        : span <= 2.5 ? std::vector<double>{1, 2, 5}
                                                      : std::vector<double>{1};
  const int decade_step = std::max(1, int(std::ceil(span / 8)));
  for (int d = int(std::floor(axis.lo)); d <= int(std::ceil(axis.hi)); d += decade_step) {
    for (double m : mantissas) {
      const double v = m * std::pow(10.0, d);
      const double a = std::log10(v);
      if (a >= axis.lo - 1e-9 && a <= axis.hi + 1e-9) axis.ticks.push_back({v, number("%g", v)});
    }
  }
  if (axis.ticks.size() < 2) {  // a narrow log range: evenly spaced values instead
    axis.ticks.clear();
    linear_ticks(axis, std::pow(10.0, axis.lo), std::pow(10.0, axis.hi), true);
  }
  return axis;
}

double x_pixel(const Axis& axis, double v) { return kLeft + axis.fraction(v) * kPlotWidth; }
double y_pixel(const Axis& axis, double v) { return kTop + (1 - axis.fraction(v)) * kPlotHeight; }

std::string text(double x, double y, const std::string& content, const std::string& attributes) {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" " + attributes + ">" + escape(content) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& attributes) {
  return "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\" " +
         attributes + "/>\n";
}

// Circle, square, triangle, diamond in turn, so that series differ in shape as well as colour.
std::string marker(size_t series, double x, double y, const char* fill) {
  const std::string style = std::string("fill=\"") + fill + "\" stroke=\"white\" stroke-width=\"1\"";
  switch (series % 4) {
    case 0: return "<circle cx=\"" + px(x) + "\" cy=\"" + px(y) + "\" r=\"4.5\" " + style + "/>\n";
    case 1: return "<rect x=\"" + px(x - 4) + "\" y=\"" + px(y - 4) + "\" width=\"8\" height=\"8\" " + style + "/>\n";
    case 2:
      return "<polygon points=\"" + px(x) + "," + px(y - 5.5) + " " + px(x + 5) + "," + px(y + 3.5) + " " +
             px(x - 5) + "," + px(y + 3.5) + "\" " + style + "/>\n";
    default:
      return "<polygon points=\"" + px(x) + "," + px(y - 5.5) + " " + px(x + 5.5) + "," + px(y) + " " + px(x) + "," +
             px(y + 5.5) + " " + px(x - 5.5) + "," + px(y) + "\" " + style + "/>\n";
  }
}

std::string error_bar(double x, double top, double bottom, const char* stroke) {
  const std::string style = std::string("stroke=\"") + stroke + "\" stroke-width=\"1.3\"";
  return line(x, top, x, bottom, style) + line(x - 4, top, x + 4, top, style) +
         line(x - 4, bottom, x + 4, bottom, style);
}

std::string header(const std::string& title) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         px(kWidth) + "\" height=\"" + px(kHeight) + "\" viewBox=\"0 0 " + px(kWidth) + " " + px(kHeight) +
         "\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n<rect width=\"" + px(kWidth) + "\" height=\"" +
         px(kHeight) + "\" fill=\"white\"/>\n" +
         text(kWidth / 2, 30, title, "font-size=\"17\" font-weight=\"bold\" text-anchor=\"middle\"");
}

std::string axis_labels(const std::string& x_label, const std::string& y_label) {
  const double middle_y = kTop + kPlotHeight / 2;
  return text(kLeft + kPlotWidth / 2, kHeight - 16, x_label, "font-size=\"14\" text-anchor=\"middle\"") +
         "<text transform=\"translate(24 " + px(middle_y) + ") rotate(-90)\" font-size=\"14\" text-anchor=\"middle\">" +
         escape(y_label) + "</text>\n";
}

std::string y_ticks(const Axis& y) {
  std::string svg;
  for (const Tick& t : y.ticks) {
    const double at = y_pixel(y, t.value);
    svg += line(kLeft, at, kLeft + kPlotWidth, at, "stroke=\"#e3e3e3\" stroke-width=\"1\"");
    svg += line(kLeft - 5, at, kLeft, at, "stroke=\"black\"");
    svg += text(kLeft - 8, at + 4, t.text, "font-size=\"12\" text-anchor=\"end\"");
  }
  return svg;
}

std::string plot_frame() {
  return "<rect x=\"" + px(kLeft) + "\" y=\"" + px(kTop) + "\" width=\"" + px(kPlotWidth) + "\" height=\"" +
         px(kPlotHeight) + "\" fill=\"none\" stroke=\"black\" stroke-width=\"1\"/>\n";
}

// One legend row per series to the right of the plot; `swatch` draws its key.
template <typename Swatch>
std::string legend(const std::vector<std::string>& names, Swatch swatch) {
  std::string svg;
  const double x = kLeft + kPlotWidth + 18;
  for (size_t i = 0; i < names.size(); ++i) {
    const double y = kTop + 10 + 22 * double(i);
    svg += swatch(i, x, y) + text(x + 34, y + 4.5, names[i], "font-size=\"13\"");
  }
  return svg;
}

std::string no_data_note(bool empty) {
  return empty ? text(kLeft + kPlotWidth / 2, kTop + kPlotHeight / 2, "no data",
                      "font-size=\"16\" fill=\"#888888\" text-anchor=\"middle\"")
               : "";
}

}  // namespace

std::string render_svg(const LineChart& chart) {
  std::vector<double> xs, ys;
  for (const LineSeries& s : chart.series) {
    VITUNE_CHECK(s.x.size() == s.y.size() && (s.error.empty() || s.error.size() == s.y.size()), "chart '",
                 chart.title, "': series '", s.name, "' has ", s.x.size(), " x, ", s.y.size(), " y and ",
                 s.error.size(), " error values; expected as many y as x, and no errors or one per point");
    for (size_t i = 0; i < s.x.size(); ++i) {
      xs.push_back(s.x[i]);
      const double e = s.error.empty() || !std::isfinite(s.error[i]) ? 0 : std::fabs(s.error[i]);
      ys.push_back(s.y[i] + e);
      ys.push_back(chart.log_y && s.y[i] - e <= 0 ? s.y[i] : s.y[i] - e);
    }
  }
  const Axis x = make_axis(xs, chart.log_x, false);
  const Axis y = make_axis(ys, chart.log_y, false);
  std::string svg = header(chart.title) + y_ticks(y);
  for (const Tick& t : x.ticks) {
    const double at = x_pixel(x, t.value);
    svg += line(at, kTop, at, kTop + kPlotHeight, "stroke=\"#e3e3e3\" stroke-width=\"1\"");
    svg += line(at, kTop + kPlotHeight, at, kTop + kPlotHeight + 5, "stroke=\"black\"");
    svg += text(at, kTop + kPlotHeight + 20, t.text, "font-size=\"12\" text-anchor=\"middle\"");
  }
  svg += plot_frame() + axis_labels(chart.x_label, chart.y_label);
  bool any_point = false;
  for (size_t si = 0; si < chart.series.size(); ++si) {
    const LineSeries& s = chart.series[si];
    svg += "<g>\n<title>" + escape(s.name) + "</title>\n";
    std::string points, marks;
    auto flush = [&] {
      if (!points.empty()) {
        svg += std::string("<polyline fill=\"none\" stroke=\"") + color(si) +
               "\" stroke-width=\"2\" stroke-linejoin=\"round\" points=\"" + points + "\"/>\n";
      }
      points.clear();
    };
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!x.usable(s.x[i]) || !y.usable(s.y[i])) {
        flush();
        continue;
      }
      any_point = true;
      const double px_x = x_pixel(x, s.x[i]), px_y = y_pixel(y, s.y[i]);
      points += (points.empty() ? "" : " ") + px(px_x) + "," + px(px_y);
      const double e = s.error.empty() || !std::isfinite(s.error[i]) ? 0 : std::fabs(s.error[i]);
      if (e > 0) {
        // On a log axis a bar reaching zero or below ends at the bottom of the plot.
        const double bottom = chart.log_y && s.y[i] - e <= 0 ? kTop + kPlotHeight : y_pixel(y, s.y[i] - e);
        marks += error_bar(px_x, y_pixel(y, s.y[i] + e), bottom, color(si));
      }
      if (chart.markers) marks += marker(si, px_x, px_y, color(si));
    }
    flush();
    svg += marks + "</g>\n";
  }
  std::vector<std::string> names;
  for (const LineSeries& s : chart.series) names.push_back(s.name);
  svg += legend(names, [&](size_t i, double lx, double ly) {
    return line(lx, ly, lx + 26, ly, std::string("stroke=\"") + color(i) + "\" stroke-width=\"2.5\"") +
           (chart.markers ? marker(i, lx + 13, ly, color(i)) : "");
  });
  return svg + no_data_note(!any_point) + "</svg>\n";
}

std::string render_svg(const BarChart& chart) {
  std::vector<double> ys;
  for (const BarSeries& s : chart.series) {
    VITUNE_CHECK(s.values.size() == chart.categories.size() && (s.error.empty() || s.error.size() == s.values.size()),
                 "chart '", chart.title, "': series '", s.name, "' has ", s.values.size(), " values and ",
                 s.error.size(), " errors for ", chart.categories.size(), " categories");
    for (size_t i = 0; i < s.values.size(); ++i) {
      const double e = s.error.empty() || !std::isfinite(s.error[i]) ? 0 : std::fabs(s.error[i]);
      ys.push_back(s.values[i] + e);
      ys.push_back(s.values[i] - e);
    }
  }
  const Axis y = make_axis(ys, false, true);
  std::string svg = header(chart.title) + y_ticks(y);
  const double slot = kPlotWidth / double(std::max<size_t>(1, chart.categories.size()));
  const double bar = 0.8 * slot / double(std::max<size_t>(1, chart.series.size()));
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    const double center = kLeft + (double(c) + 0.5) * slot;
    svg += line(center, kTop + kPlotHeight, center, kTop + kPlotHeight + 5, "stroke=\"black\"");
    svg += text(center, kTop + kPlotHeight + 20, chart.categories[c], "font-size=\"12\" text-anchor=\"middle\"");
  }
  svg += plot_frame() + axis_labels(chart.x_label, chart.y_label);
  bool any_bar = false;
  const double zero = y_pixel(y, 0);
  for (size_t si = 0; si < chart.series.size(); ++si) {
    const BarSeries& s = chart.series[si];
    svg += "<g>\n<title>" + escape(s.name) + "</title>\n";
    std::string bars, errors;
    for (size_t c = 0; c < s.values.size(); ++c) {
      if (!std::isfinite(s.values[c])) continue;
      any_bar = true;
      const double left = kLeft + double(c) * slot + 0.1 * slot + double(si) * bar;
      const double top = y_pixel(y, s.values[c]);
      bars += "<rect x=\"" + px(left) + "\" y=\"" + px(std::min(top, zero)) + "\" width=\"" + px(bar) +
              "\" height=\"" + px(std::fabs(zero - top)) + "\" fill=\"" + color(si) + "\"/>\n";
      const double e = s.error.empty() || !std::isfinite(s.error[c]) ? 0 : std::fabs(s.error[c]);
      if (e > 0) {
        errors += error_bar(left + bar / 2, y_pixel(y, s.values[c] + e), y_pixel(y, s.values[c] - e), "black");
      }
    }
    svg += bars + errors + "</g>\n";
  }
  svg += line(kLeft, zero, kLeft + kPlotWidth, zero, "stroke=\"black\" stroke-width=\"1\"");
  std::vector<std::string> names;
  for (const BarSeries& s : chart.series) names.push_back(s.name);
  svg += legend(names, [&](size_t i, double lx, double ly) {
    return "<rect x=\"" + px(lx + 4) + "\" y=\"" + px(ly - 7) + "\" width=\"18\" height=\"14\" fill=\"" + color(i) +
           "\"/>\n";
  });
  return svg + no_data_note(!any_bar) + "</svg>\n";
}

void write_svg(const std::string& path, const std::string& svg) { write_file_atomically(path, svg); }

}  // namespace vitune::cli
