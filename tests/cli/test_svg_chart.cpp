// The SVG chart writer and the plasticity chart: output is well-formed XML (every tag
// closed in order), holds the title, labels, series names and tick labels, puts points
// where the axes say (equal steps on a log axis for equal ratios), breaks lines at
// missing points, escapes text, and refuses mismatched data.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli/plots.h"
#include "cli/svg_chart.h"
#include "engine/error.h"

namespace vitune::cli {
namespace {

// Whether every element is closed, in order, and nothing follows the root.
bool well_formed(const std::string& svg, std::string& problem) {
  std::vector<std::string> open;
  size_t pos = 0;
  bool root_closed = false;
  while ((pos = svg.find('<', pos)) != std::string::npos) {
    const size_t end = svg.find('>', pos);
    if (end == std::string::npos) return problem = "unterminated tag", false;
    const std::string tag = svg.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.empty()) return problem = "empty tag", false;
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (root_closed) return problem = "content after the root", false;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return problem = "unexpected </" + tag.substr(1) + ">", false;
      open.pop_back();
      root_closed = open.empty();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (tag.back() != '/') open.push_back(name);
  }
  if (!open.empty()) return problem = "<" + open.back() + "> never closed", false;
  return true;
}

void expect_well_formed(const std::string& svg) {
  std::string problem;
  EXPECT_TRUE(well_formed(svg, problem)) << problem;
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

// The x pixel coordinates of the first polyline.
std::vector<double> first_polyline_x(const std::string& svg) {
  std::smatch match;
  EXPECT_TRUE(std::regex_search(svg, match, std::regex("points=\"([^\"]*)\"")));
  std::vector<double> xs;
  std::stringstream points(match[1].str());
  std::string point;
  while (points >> point) xs.push_back(std::stod(point.substr(0, point.find(','))));
  return xs;
}

TEST(SvgChart, LineChartHasItsPartsAndIsWellFormed) {
  LineChart chart;
  chart.title = "Accuracy <by> lr & seed";
  chart.x_label = "learning rate";
  chart.y_label = "top-1 (%)";
  chart.log_x = true;
  chart.series = {{"mha", {1e-3, 1e-2, 1e-1}, {80, 85, 83}, {1, 0.5, 2}}, {"ln1", {1e-3, 1e-2, 1e-1}, {70, 75, 74}, {}}};
  const std::string svg = render_svg(chart);
  expect_well_formed(svg);
  EXPECT_NE(svg.find("Accuracy &lt;by&gt; lr &amp; seed"), std::string::npos);
  for (const char* part : {">learning rate</text>", ">top-1 (%)</text>", ">mha</text>", ">ln1</text>",
                           ">0.001</text>", ">0.01</text>", ">0.1</text>"}) {
    EXPECT_NE(svg.find(part), std::string::npos) << part;
  }
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(count(svg, "<title>"), 2u);
  // Three error bars of three lines each, for the first series only.
  EXPECT_EQ(count(svg, "stroke=\"#1f77b4\" stroke-width=\"1.3\""), 9u);
  // Equal ratios are equal steps on the log axis.
  std::vector<double> xs = first_polyline_x(svg);
  ASSERT_EQ(xs.size(), 3u);
  EXPECT_NEAR(xs[1] - xs[0], xs[2] - xs[1], 0.11);
  EXPECT_GT(xs[1] - xs[0], 100);
}

TEST(SvgChart, LinearTicksAreRoundNumbersAndGapsBreakLines) {
  LineChart chart;
  chart.title = "loss";
  chart.markers = false;
  chart.series = {{"run", {0, 10, 20, 30, 40}, {1.0, 0.8, NAN, 0.4, 0.3}, {}}};
  const std::string svg = render_svg(chart);
  expect_well_formed(svg);
  EXPECT_EQ(count(svg, "<polyline"), 2u);  // broken at the missing point
  for (const char* tick : {">0</text>", ">10</text>", ">20</text>", ">40</text>", ">0.4</text>", ">0.8</text>"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
  EXPECT_EQ(count(svg, "<circle"), 0u);
  // Linear x: equal differences, equal steps.
  std::vector<double> xs = first_polyline_x(svg);
  ASSERT_EQ(xs.size(), 2u);
  EXPECT_GT(xs[1], xs[0]);
  EXPECT_EQ(render_svg(LineChart{}).find("no data") != std::string::npos, true);
}

TEST(SvgChart, RefusesMismatchedSeries) {
  LineChart line;
  line.series = {{"a", {1, 2}, {1}, {}}};
  EXPECT_THROW(render_svg(line), Error);
  line.series = {{"a", {1, 2}, {1, 2}, {0.1}}};
  EXPECT_THROW(render_svg(line), Error);
  BarChart bars;
  bars.categories = {"0", "1"};
  bars.series = {{"a", {1, 2, 3}, {}}};
  EXPECT_THROW(render_svg(bars), Error);
}

TEST(SvgChart, GroupedBarsPerCategory) {
  BarChart chart;
  chart.title = "per layer";
  chart.x_label = "block";
  chart.y_label = "value";
  chart.categories = {"0", "1", "2"};
  chart.series = {{"ln1", {0.5, 0.6, 0.7}, {0.1, 0.1, 0.1}}, {"mha", {2.0, NAN, 2.5}, {}}};
  const std::string svg = render_svg(chart);
  expect_well_formed(svg);
  // Background, plot frame, two legend swatches and five bars (one value is missing).
  EXPECT_EQ(count(svg, "<rect"), 2u + 2u + 5u);
  for (const char* part : {">block</text>", ">value</text>", ">ln1</text>", ">mha</text>", ">2</text>"}) {
    EXPECT_NE(svg.find(part), std::string::npos) << part;
  }
}

TEST(SvgChart, PlasticityChartFromItsJson) {
  nlohmann::json plasticity{{"protocol", "paper"}, {"components", nlohmann::json::array()}};
  const std::vector<std::pair<std::string, double>> components{
      {"ln1", 0.4}, {"mha", 3.0}, {"ln2", 0.9}, {"fc1", 1.8}, {"fc2", 1.6}};
  for (int block = 0; block < 4; ++block) {
    for (const auto& [name, value] : components) {
      plasticity["layers"].push_back(
          {{"block", block}, {"component", name}, {"mean", value * (1 + 0.2 * block)}, {"std", 0.05 * value}});
    }
  }
  // The whole block's plasticity and an unmeasured layer are left out of the chart.
  plasticity["layers"].push_back({{"block", 0}, {"component", "block"}, {"mean", 7.0}, {"std", 0.1}});
  plasticity["layers"][1]["mean"] = nullptr;
  const std::string path = ::testing::TempDir() + "/plasticity.svg";
  write_plasticity_svg(plasticity, path);
  std::ifstream in(path);
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  expect_well_formed(svg);
  EXPECT_NE(svg.find("(paper protocol)"), std::string::npos);
  for (const char* part : {">ln1</text>", ">mha</text>", ">ln2</text>", ">fc1</text>", ">fc2</text>", ">3</text>"}) {
    EXPECT_NE(svg.find(part), std::string::npos) << part;
  }
  EXPECT_EQ(svg.find(">block</text>", svg.find(">block</text>") + 1), std::string::npos);  // the x label only
  EXPECT_EQ(count(svg, "<rect"), 2u + 5u + 19u);  // background, frame, legend, 4 x 5 bars less the null one
  // The legend in the paper's component order.
  EXPECT_LT(svg.find(">ln1</text>"), svg.find(">mha</text>"));
  EXPECT_LT(svg.find(">mha</text>"), svg.find(">fc2</text>"));

  plasticity["layers"][2].erase("mean");
  try {
    write_plasticity_svg(plasticity, path);
    FAIL() << "a layer without a mean was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layers[2]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(write_plasticity_svg(nlohmann::json{{"protocol", "paper"}}, path), Error);
}

}  // namespace
}  // namespace vitune::cli
