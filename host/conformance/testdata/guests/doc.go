// Package guests holds the conformance kit's test plugins, built for wasip1 by its tests.
package guests
