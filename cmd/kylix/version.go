package main

// version is the release this tool belongs to: include/kylix.h's KYLIX_VERSION_MAJOR, _MINOR
// and _PATCH (TestVersionMatchesHeader keeps them equal).
const version = "0.1.0"
