//go:build tools

package tools

import _ "github.com/open-feature/flagd/flagd"
