// Package merge groups floe's merge layer, one package per step of a merge.
//
// In the order a merge takes them: classify decides what each side did to a
// table, tablemerge writes the Iceberg side (cherry-picks, replays, unions of
// deletes, merges by row id), mergeengine merges or transplants a whole
// catalog commit, mergecheck validates a merge-queue candidate and mergequeue
// is the single committer of protected branches. This package holds no code;
// its subpackages sit below the APIs and never import rest/ or server/.
package merge
