#pragma once
// Editing an HDF5 file in place, as someone (or a failing disk) might: the tests of what
// poreforge refuses to trust.
#include <H5Cpp.h>

#include <string>
#include <vector>

namespace poreforge::testing {

/// Rewrites a numeric attribute of the file's root group.
inline void set_hdf5_attribute(const std::string& path, const std::string& name, double value) {
  H5::H5File file(path, H5F_ACC_RDWR);
  H5::Attribute a = file.openAttribute(name);
  a.write(H5::PredType::NATIVE_DOUBLE, &value);
}

/// Reads dataset `name` as T, lets `edit` change the values (not their number), writes them back.
template <class T, class Edit>
void edit_hdf5_dataset(const std::string& path, const std::string& name, const H5::PredType& type, Edit edit) {
  H5::H5File file(path, H5F_ACC_RDWR);
  H5::DataSet ds = file.openDataSet(name);
  std::vector<T> values(static_cast<std::size_t>(ds.getSpace().getSimpleExtentNpoints()));
  ds.read(values.data(), type);
  edit(values);
  ds.write(values.data(), type);
}

}  // namespace poreforge::testing
