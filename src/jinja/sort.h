#pragma once
// A stable merge sort whose comparison may fail. Python's sorted() raises TypeError on
// keys it cannot order (a str and an int): the comparison returns that error, and the
// sort stops and returns it. std::stable_sort cannot do this, and feeding it a
// comparison that is not a strict weak order is undefined behaviour.

#include <cstddef>
#include <utility>
#include <vector>

#include "core/status.h"

namespace pagoda::jinja {

// less(a, b) -> Expected<bool>: whether a sorts strictly before b.
template <typename T, typename Less>
Status stable_sort(std::vector<T>& items, Less&& less) {
  std::vector<T> buffer(items.size());
  // Bottom-up: merge runs of width 1, 2, 4, ... from `items` into `buffer` and back.
  for (size_t width = 1; width < items.size(); width *= 2) {
    for (size_t left = 0; left < items.size(); left += 2 * width) {
      const size_t mid = std::min(left + width, items.size());
      const size_t right = std::min(left + 2 * width, items.size());
      size_t i = left, j = mid, k = left;
      while (i < mid && j < right) {
        // Take from the right run only when strictly smaller: stability.
        PAGODA_ASSIGN_OR_RETURN(const bool right_first, less(items[j], items[i]));
        buffer[k++] = std::move(right_first ? items[j++] : items[i++]);
      }
      while (i < mid) buffer[k++] = std::move(items[i++]);
      while (j < right) buffer[k++] = std::move(items[j++]);
    }
    items.swap(buffer);
  }
  return {};
}

}  // namespace pagoda::jinja
