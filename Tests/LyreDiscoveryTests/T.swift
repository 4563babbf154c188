import Testing; @Test func t() {}
