// Index checks shared by the dataset implementations.
#include "data/dataset.h"

namespace vitune::data {

void check_index(const Dataset& dataset, int64_t i, const char* what) {
  VITUNE_CHECK(i >= 0 && i < dataset.size(), what, ": example index ", i,
               " is out of range for a dataset of ", dataset.size(), " examples");
}

}  // namespace vitune::data
