// Output files of the mdl commands (`--out`, `-o`): every command creates
// the folders an output needs, and none writes over a file it reads.
#pragma once

#include <string>
#include <vector>

namespace mdl::tools {

/// Creates `dir` and its missing parents; false with `error` ("PATH: why").
bool makeDirs(const std::string &dir, std::string &error);

/// Creates the folders that the file `path` will be written into.
bool makeParentDirs(const std::string &path, std::string &error);

/// True when writing `output` would replace one of `inputs` (the same file,
/// whatever the spelling: compared by device and inode where both exist,
/// and by resolved path otherwise); `which` is that input.
bool overwritesInput(const std::string &output, const std::vector<std::string> &inputs,
                     std::string &which);

} // namespace mdl::tools
