extension Array {
    /// Empties the array and keeps its storage, one element at a time: `removeAll(keepingCapacity: true)` goes
    /// through the generic `replaceSubrange`, which costs more than the few elements the link model's event lists
    /// hold.
    mutating func removeAllKeepingCapacity() {
        while !isEmpty { removeLast() }
    }
}
