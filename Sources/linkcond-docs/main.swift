// Prints a documentation page with its generated parts made anew from the code, for scripts/generate-docs.
//
//   linkcond-docs profile-keys PAGE   PAGE (docs/reference/profiles.md) with its key tables from ProfileSettings.all
import Foundation
import LinkProfiles

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, arguments.first == "profile-keys" else {
    FileHandle.standardError.write(Data("usage: linkcond-docs profile-keys PAGE\n".utf8))
    exit(2)
}
let path = arguments.last!
guard let data = FileManager.default.contents(atPath: path), let page = String(data: data, encoding: .utf8) else {
    FileHandle.standardError.write(Data("linkcond-docs: cannot read \(path)\n".utf8))
    exit(1)
}
guard let updated = ProfileKeyReference.updating(page) else {
    let problem = "linkcond-docs: \(path) lacks a profile-keys marker pair for some section\n"
    FileHandle.standardError.write(Data(problem.utf8))
    exit(1)
}
FileHandle.standardOutput.write(Data(updated.utf8))
