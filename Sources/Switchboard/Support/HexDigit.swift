extension UInt8 {
    /// The value of an ASCII hexadecimal digit (`0`-`9`, `a`-`f`, `A`-`F`, either case), or `nil` for any other
    /// byte: for percent escapes, JSON's `\u` escapes and IPv4 addresses written in hexadecimal.
    var hexDigitValue: UInt8? {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): self - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): self - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): self - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// The upper-case ASCII hexadecimal digit of a value below 16, for percent escapes.
    static func upperHexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }
}
