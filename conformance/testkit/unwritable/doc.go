// Package unwritable makes a test's directory tree refuse new files while
// its files stay readable.
//
// It makes a test's directory tree refuse new files, as a warehouse whose
// permissions were taken away or whose file system turned read-only does,
// while its files stay readable: the fault tests of the merge engine and the
// merge queue write through it. It is for tests only, touches only the
// directory it is given, and imports only the standard library.
package unwritable
