package mcp

// addSearch registers search_messages once the SQL projection's search is wired.
func (s *Server) addSearch() {}
