// A small SVG chart writer for results: line charts with several series (markers,
// optional error bars, linear or log axes) and grouped bar charts (one group per
// category such as a layer, one bar per series), each with a title, axis labels,
// ticks with readable numbers and a legend. Self-contained SVG 1.1, no scripts.
#pragma once

#include <string>
#include <vector>

namespace vitune::cli {

struct LineSeries {
  std::string name;
  std::vector<double> x, y;
  std::vector<double> error;  // empty, or one half-width per point: a bar from y - e to y + e
};

struct LineChart {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;
  bool markers = true;  // a marker at every point (off for long curves)
  std::vector<LineSeries> series;
};

struct BarSeries {
  std::string name;
  std::vector<double> values;  // one per category
  std::vector<double> error;   // empty, or one half-width per category
};

struct BarChart {
  std::string title, x_label, y_label;
  std::vector<std::string> categories;
  std::vector<BarSeries> series;
};

// The SVG text. Points that are not finite (or not positive on a log axis) are left
// out, and a line breaks there. Throws vitune::Error when the lengths do not match.
std::string render_svg(const LineChart& chart);
std::string render_svg(const BarChart& chart);

// Writes an SVG file atomically.
void write_svg(const std::string& path, const std::string& svg);

}  // namespace vitune::cli
