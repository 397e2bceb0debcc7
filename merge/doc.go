// Package merge groups floe's merge layer, one package per step, in the
// order a merge takes them: classify (what each side did to a table),
// tablemerge (the Iceberg writing: cherry-pick, replay, unions of deletes,
// merges by row id), mergeengine (a merge or transplant of a whole catalog
// commit), mergecheck (validation of a merge-queue candidate) and
// mergequeue (the single committer of protected branches). This package
// itself holds no code; its subpackages sit below the APIs and never import
// rest/ or server/.
package merge
