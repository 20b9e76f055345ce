// Package outsidebuild checks that a third party's plugin, built outside this repository the
// way docs/writing-plugins.md says, is reproducible: the same sources give the same sha256
// wherever they are built, and the module embeds no path of the machine that built it.
package outsidebuild
