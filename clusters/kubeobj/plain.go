package kubeobj

import "bytes"

// Member is one member of a JSON object: its key and its value's bytes,
// both slices of the document they were read from.
type Member struct {
	Key, Value []byte
}

// AppendPlainMembers appends the members of the JSON object data to dst,
// in their order, and reports whether data is in plain form: the bytes
// Marshal writes for what Unmarshal reads from them, for a document made
// of objects whose keys are in strictly increasing byte order, arrays,
// strings of the printable ASCII Marshal copies as it is (no '"', '\\',
// '<', '>' or '&'), integers of up to 18 digits without a leading zero
// (and not -0), true, false and null, without white space. For such a
// document Marshal(Unmarshal(data)) is data, byte for byte, so a caller
// that changes a few members may copy the others as they are and get what
// decoding, changing and encoding again would give. For any other
// document it returns dst unchanged and false. TestPlainIsAFixedPoint and
// FuzzPlainMembers hold it to that.
func AppendPlainMembers(dst []Member, data []byte) ([]Member, bool) {
	s := plainScanner{data: data}
	out := dst
	ok := s.members(0, func(key, value []byte) { out = append(out, Member{Key: key, Value: value}) })
	if !ok || s.i != len(data) {
		return dst, false
	}
	return out, true
}

// plainScanner checks a document's plain form from an offset.
type plainScanner struct {
	data []byte
	i    int
}

// at reports whether the byte at the offset is c.
func (s *plainScanner) at(c byte) bool {
	return s.i < len(s.data) && s.data[s.i] == c
}

// value reads the value at the offset.
func (s *plainScanner) value(depth int) bool {
	if s.i == len(s.data) {
		return false
	}
	switch c := s.data[s.i]; {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		return s.string()
	case c == '-' || c >= '0' && c <= '9':
		return s.integer()
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(s.data[s.i:], []byte(lit)) {
			s.i += len(lit)
			return true
		}
	}
	return false
}

// object reads the object at the offset.
func (s *plainScanner) object(depth int) bool {
	return s.members(depth, nil)
}

// members reads the object at the offset, calling each (when not nil)
// with each member's key and value.
func (s *plainScanner) members(depth int, each func(key, value []byte)) bool {
	if depth > maxUnmarshalDepth || !s.at('{') {
		return false
	}
	s.i++
	if s.at('}') {
		s.i++
		return true
	}
	var prev []byte
	for first := true; ; first = false {
		start := s.i
		if !s.string() {
			return false
		}
		key := s.data[start+1 : s.i-1]
		if !first && bytes.Compare(prev, key) >= 0 {
			return false // out of order, or a duplicate
		}
		prev = key
		if !s.at(':') {
			return false
		}
		s.i++
		start = s.i
		if !s.value(depth) {
			return false
		}
		if each != nil {
			each(key, s.data[start:s.i])
		}
		switch {
		case s.at(','):
			s.i++
		case s.at('}'):
			s.i++
			return true
		default:
			return false
		}
	}
}

// array reads the array at the offset.
func (s *plainScanner) array(depth int) bool {
	if depth > maxUnmarshalDepth {
		return false
	}
	s.i++ // '['
	if s.at(']') {
		s.i++
		return true
	}
	for {
		if !s.value(depth) {
			return false
		}
		switch {
		case s.at(','):
			s.i++
		case s.at(']'):
			s.i++
			return true
		default:
			return false
		}
	}
}

// string reads the string at the offset: printable ASCII that
// AppendJSONString copies as it is.
func (s *plainScanner) string() bool {
	if !s.at('"') {
		return false
	}
	for j := s.i + 1; j < len(s.data); j++ {
		switch c := s.data[j]; {
		case c == '"':
			s.i = j + 1
			return true
		case c < ' ' || c > '~' || c == '\\' || c == '<' || c == '>' || c == '&':
			return false
		}
	}
	return false
}

// integer reads the integer at the offset as strconv.AppendInt writes an
// int64 of up to 18 digits.
func (s *plainScanner) integer() bool {
	j := s.i
	neg := s.data[j] == '-'
	if neg {
		j++
	}
	start := j
	for j < len(s.data) && s.data[j] >= '0' && s.data[j] <= '9' {
		j++
	}
	digits := j - start
	if digits == 0 || digits > 18 || s.data[start] == '0' && (digits > 1 || neg) {
		return false
	}
	s.i = j
	return true
}
