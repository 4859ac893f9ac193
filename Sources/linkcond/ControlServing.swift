import LinkConditioner
import Logging

extension ConditionedProxy {
    /// Serves the control endpoint at `address`. A loopback TCP endpoint without a token gets a random one,
    /// written to a 0600 file in the user's private directory where the linkcond command finds it.
    /// Returns the ready line's address and the token file made, if any.
    func serveLocalControl(at address: ControlAddress, token controlToken: String?, logger: Logger) throws -> (
        String, String?
    ) {
        guard controlToken == nil, case .tcp = address, address.isLocalOnly else {
            return (try serveControl(at: address, token: controlToken), nil)
        }
        try PrivateFiles.prepareDirectory(ControlAddress.privateDirectory)
        let token = ControlToken.random()
        let served = try serveControl(at: address, token: token)
        guard case .tcp(let endpoint)? = ControlAddress(parsing: served) else { return (served, nil) }
        let file = ControlAddress.tokenFile(port: endpoint.port)
        try PrivateFiles.write(token + "\n", to: file)
        logger.info(
            "control token in \(file) (the linkcond command reads it; scripts send it as \"Authorization: Bearer TOKEN\")"
        )
        return (served, file)
    }
}
