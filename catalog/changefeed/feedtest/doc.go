// Package feedtest holds what the tests of the change feed and of its
// consumers share: reading a whole feed.
//
// It imports changefeed and testing; only tests import it.
package feedtest
